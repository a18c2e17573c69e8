// vm/cuda/persistent_kernel_fold.cu: the fold kernel (persistent_kernel.h, fold_kernel()): the
// persistent kernel again, with RMSNORM_MLP_FOLD tasks on the weight stream (AMK_FOLD_STREAM). A
// translation unit of its own so that the default kernel never carries the fold's streamed path,
// which costs every task 1.3-3.5% through ptxas' allocation of the whole kernel
// (docs/PERFORMANCE.md rows 140, 160); its kernel and host functions live in namespace fold_tu.
// CUDA only: the HIP VM has no weight stream for folds (fold_kernel() is the default there).
#ifndef AMK_FOLD_STREAM
#define AMK_FOLD_STREAM 1
#endif  // AMK_FOLD_STREAM
#define AMK_FOLD_KERNEL_TU 1
#define AMK_KERNEL_TU_NS fold_tu
#include "vm/cuda/persistent_kernel.cu"
