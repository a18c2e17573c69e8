// targets/warp_butterfly.h: the xor-butterfly schedule behind gpu::warp_sum and gpu::warp_max,
// written once for any warp width. gpu.h runs it with a shuffle per step (one value per lane);
// tests/targets/warp_butterfly_test.cpp runs the very same function on the host over a whole warp
// held as an array (the exchange permutes the array), for widths 32 (CUDA) and 64 (AMD CDNA).
// Includes no vendor header, so a host-only test can include it.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define AMK_BUTTERFLY_HD __host__ __device__ inline
#else
#define AMK_BUTTERFLY_HD inline
#endif  // __CUDACC__ || __HIPCC__

namespace amk::gpu {

/// Whether `w` lanes can be reduced by the butterfly: a power of two (then lane ^ m stays < w).
AMK_BUTTERFLY_HD constexpr bool warp_width_ok(int w) { return w >= 1 && (w & (w - 1)) == 0; }

/// Reduce over W lanes: for m = W/2, W/4, ..., 1 every lane combines its value with lane
/// (lane ^ m)'s. After log2(W) steps every lane holds `op` over all W lanes, each counted once.
/// `exchange(v, m)` returns what lane (lane ^ m) holds; every lane must take part in every step.
/// `op` must be associative and commutative (the lanes combine in different orders).
template <int W, class T, class Exchange, class Op>
AMK_BUTTERFLY_HD T warp_butterfly(T v, Exchange exchange, Op op) {
  static_assert(warp_width_ok(W), "the xor butterfly needs a power-of-two warp width");
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)  // device passes only: host compilers warn
#pragma unroll
#endif  // __CUDA_ARCH__ || __HIP_DEVICE_COMPILE__
  for (int m = W / 2; m >= 1; m >>= 1) v = op(v, exchange(v, m));
  return v;
}

}  // namespace amk::gpu
