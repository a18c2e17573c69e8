// instructions/rope_bf16.cuh: the decode case of ROPE and FUSED ROPE_APPEND on the device, bf16
// heads with an f32 inv_freq table, contiguous. Each thread loads every pair it owns (up to
// kRopePairs) before it computes or stores any, so a block pays one memory round trip for up to
// kRopePairs * threads pairs (Llama's 32 query heads of 64: 1024 pairs, one round). The generic
// per-pair loop (rope.cuh) paid one round trip per block_for iteration: three for those heads,
// 10 us of a 10 us task (docs/PERFORMANCE.md row 35). Its own function with plain pointers: an
// earlier batched version through the dtype-generic Tensor loads grew the kernel's local memory
// and got slower (row 28). The arithmetic is the generic path's: fp32 angle pos * inv_freq,
// rotate-half, one bf16 rounding per output; sin and cos come from sincosf.
#pragma once
#include "instructions/device_common.cuh"

namespace amk::instructions {

/// Pairs per thread per round of rope_bf16_pairs.
inline constexpr int kRopePairs = 3;

/// y[h * head_dim + i], y[... + half] = rope(x[...], pos) for the n_pairs = heads * half pairs.
/// y may be x (every load of a round precedes its stores, and rounds touch disjoint pairs).
/// Whole block (compute threads).
AMK_DEVICE_NOINLINE void rope_bf16_pairs(const uint16_t* x, uint16_t* y, const float* inv_freq, int32_t n_pairs,
                                         int32_t half, int32_t head_dim, float pos) {
  const int32_t threads = static_cast<int32_t>(block_threads());
  for (int32_t e0 = static_cast<int32_t>(block_tid()); e0 < n_pairs; e0 += threads * kRopePairs) {
    float x0[kRopePairs], x1[kRopePairs], f[kRopePairs];
    int32_t o[kRopePairs];
#pragma unroll
    for (int j = 0; j < kRopePairs; ++j) {
      const int32_t e = e0 + j * threads;
      const int32_t h = e / half, i = e - h * half;
      o[j] = h * head_dim + i;
      if (e < n_pairs) {
        f[j] = inv_freq[i];
        x0[j] = bf16_to_f32(x[o[j]]);
        x1[j] = bf16_to_f32(x[o[j] + half]);
      }
    }
#pragma unroll
    for (int j = 0; j < kRopePairs; ++j) {
      if (e0 + j * threads < n_pairs) {
        float s, c;
        sincosf(pos * f[j], &s, &c);
        y[o[j]] = f32_to_bf16(x0[j] * c - x1[j] * s);
        y[o[j] + half] = f32_to_bf16(x1[j] * c + x0[j] * s);
      }
    }
  }
}

/// The fast path for `x` -> elements [out_offset, out_offset + x.numel) of `out` when it applies (x
/// and out bf16, inv_freq f32, all contiguous, x's indices in int32); false otherwise, and nothing
/// is written. Whole block.
AMK_DEVICE bool rope_bf16_try(const Tensor& x, const Tensor& inv_freq, const Tensor& out, int64_t out_offset,
                              int64_t head_dim, float pos) {
  if (x.dtype != AMK_DTYPE_BF16 || out.dtype != AMK_DTYPE_BF16 || inv_freq.dtype != AMK_DTYPE_F32 || !x.contiguous ||
      !out.contiguous || !inv_freq.contiguous || x.numel > INT32_MAX)
    return false;
  rope_bf16_pairs(static_cast<const uint16_t*>(x.ptr), static_cast<uint16_t*>(out.ptr) + out_offset,
                  static_cast<const float*>(inv_freq.ptr), static_cast<int32_t>(x.numel / 2),
                  static_cast<int32_t>(head_dim / 2), static_cast<int32_t>(head_dim), pos);
  return true;
}

}  // namespace amk::instructions
