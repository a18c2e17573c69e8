// instructions/layer_norm.cuh: LAYERNORM (4) on the device: per row, block sums for the mean and
// the biased variance, then y = (x - mean) * inv * w + b (b = 0 when absent, as the CPU does).
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/layer_norm.h"

namespace amk::instructions {

/// LAYERNORM, whole block.
AMK_DEVICE_NOINLINE int32_t layer_norm_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  LayerNormArgs* const s_args = shared_args<LayerNormArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](LayerNormArgs* out) { return decode_layer_norm(p, inst, out); }));
  const LayerNormArgs& a = *s_args;
  const int64_t H = a.hidden;
  const float n = static_cast<float>(H);
  for (int64_t r = 0; r < a.rows; ++r) {
    float s = 0.0f;
    block_for(H, [&](int64_t h) { s += a.x.load(r * H + h); });
    const float mean = compute_sum(s, ctx.s_red) / n;
    float sq = 0.0f;
    block_for(H, [&](int64_t h) {
      const float d = a.x.load(r * H + h) - mean;
      sq = fmaf(d, d, sq);
    });
    const float inv = 1.0f / sqrtf(compute_sum(sq, ctx.s_red) / n + a.eps);
    block_for(H, [&](int64_t h) {
      const float b = a.has_bias ? a.b.load(h) : 0.0f;
      a.y.store(r * H + h, (a.x.load(r * H + h) - mean) * inv * a.w.load(h) + b);
    });
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
