// vm/cuda/persistent_kernel_rope.cu: the rope kernel (persistent_kernel.h, step_gemv_kernel()): the
// persistent kernel again, with the step-position GEMVs (FUSED RMSNORM_GEMV_ROPE / _APPEND /
// _ROPE_APPEND, docs/ROPE_IN_GEMV.md) on the weight stream and off it. A translation unit of its
// own for the fold kernel's reason: in the default kernel their code cost every other program
// 1-2% per token (docs/PERFORMANCE.md row 185); its kernel and host functions live in namespace
// rope_tu. CUDA only: HIP's only kernel runs them (step_gemv_kernel() is the default there).
#define AMK_STEP_GEMV_KERNEL_TU 1
#define AMK_KERNEL_TU_NS rope_tu
#include "vm/cuda/persistent_kernel.cu"
