// vm/cuda/persistent_kernel_attn.cu: the attention kernel (persistent_kernel.h, attention_kernel()):
// the persistent kernel again, with FUSED ATTENTION_GEMV_ADD tasks on the weight stream
// (AMK_ATTENTION_ROW_STREAM: each o_proj tile computes the layer's attention into its staged x,
// docs/ATTENTION_IN_O.md). A translation unit of its own for the fold kernel's reason: the call
// at the head of its streamed tasks moves ptxas' allocation of the whole kernel (spill stores
// 136 -> 156 B on sm_90a), which every other program would pay; its kernel and host functions
// live in namespace attn_tu. CUDA only: the HIP VM has no weight stream (attention_kernel() is the
// default there).
#ifndef AMK_ATTENTION_ROW_STREAM
#define AMK_ATTENTION_ROW_STREAM 1
#endif  // AMK_ATTENTION_ROW_STREAM
#define AMK_ATTENTION_KERNEL_TU 1
#define AMK_KERNEL_TU_NS attn_tu
#include "vm/cuda/persistent_kernel.cu"
