// instructions/rms_norm.cuh: RMSNORM (3) on the device: per row, a block sum of squares, then
// y = x * rms_inv(...) * w (rms_inv from rms_norm.h, shared with the CPU). y may be x: every
// element is read in the reduction before the barrier inside block_sum, then rewritten.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/rms_norm.h"

namespace amk::instructions {

/// RMSNORM, whole block.
AMK_DEVICE_NOINLINE int32_t rms_norm_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  RmsNormArgs* const s_args = shared_args<RmsNormArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](RmsNormArgs* out) { return decode_rms_norm(p, inst, out); }));
  const RmsNormArgs& a = *s_args;
  const int64_t H = a.hidden;
  for (int64_t r = 0; r < a.rows; ++r) {
    float ss = 0.0f;
    block_for(H, [&](int64_t h) {
      const float v = a.x.load(r * H + h);
      ss = fmaf(v, v, ss);
    });
    const float inv = rms_inv(compute_sum(ss, ctx.s_red), H, a.eps);
    block_for(H, [&](int64_t h) { a.y.store(r * H + h, a.x.load(r * H + h) * inv * a.w.load(h)); });
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
