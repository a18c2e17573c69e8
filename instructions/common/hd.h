// instructions/common/hd.h: AMK_HD marks helpers that are shared by the CPU reference and a future
// device micro-kernel. Until targets/gpu.h exists this header defines the host-only spelling; a
// device translation unit that includes gpu.h first gets `__host__ __device__ inline` instead.
#pragma once

#ifndef AMK_HD
#if defined(__CUDACC__) || defined(__HIPCC__)
#define AMK_HD __host__ __device__ inline
#else
#define AMK_HD inline
#endif  // __CUDACC__ || __HIPCC__
#endif  // AMK_HD
