// instructions/block_geometry.h: the shape of a persistent-kernel block, which the host (shared
// memory sizing, reports) and the device micro-kernels (strides, reductions, barriers) must agree
// on. On CUDA the block is one loader warp plus compute warps: the loader stages the next tasks'
// instructions and operands, watches their counters and streams their weights while the compute
// warps run the current task, which synchronise among themselves with a named barrier that the
// loader never joins (vm/cuda/persistent_kernel.cu). AMD workgroups have one barrier for all their
// wavefronts, so a loader wavefront could not run on independently: on HIP every wavefront computes
// and the kernel stages each task itself.
#pragma once
#include "targets/gpu.h"

namespace amk::instructions {

/// Threads per persistent-kernel block: 12 warps on CUDA, 8 wavefronts on CDNA. 12 warps rather
/// than 16 because `__launch_bounds__(kBlockThreads, 1)` gives each thread 65536 / threads
/// registers: at 512 the kernel was held to 128 (148 bytes of spills), at 384 it gets 168 and runs
/// 1.6-2.7% faster per token on an H200 (Llama-1B and 8B shapes; 10 and 13 warps were slower;
/// docs/PERFORMANCE.md, row 63). The CMake cache variable AMK_BLOCK_THREADS overrides it for
/// measurements; the host code that plans GEMV splits for the compute warps sees the same value.
#if defined(AMK_BLOCK_THREADS)
inline constexpr int kBlockThreads = AMK_BLOCK_THREADS;
#elif defined(AMK_USE_HIP)
inline constexpr int kBlockThreads = 512;
#else
inline constexpr int kBlockThreads = 384;
#endif

#ifdef AMK_USE_HIP
inline constexpr int kLoaderWarps = 0;
#else
inline constexpr int kLoaderWarps = 1;
#endif  // AMK_USE_HIP

/// Threads that run micro-kernels: threads [0, kComputeThreads) of the block; the loader warp,
/// if any, comes after them.
inline constexpr int kComputeThreads = kBlockThreads - kLoaderWarps * gpu::kWarpSize;
inline constexpr int kComputeWarps = kComputeThreads / gpu::kWarpSize;

/// The named barrier the compute warps use (0 is __syncthreads', which the whole block joins).
inline constexpr int kComputeBarrier = 1;

static_assert(kComputeThreads % gpu::kWarpSize == 0 && kComputeWarps >= 1, "whole compute warps");

}  // namespace amk::instructions
