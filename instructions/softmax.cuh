// instructions/softmax.cuh: SOFTMAX (14) on the device, per row: block max (NaN-ignoring, like the
// CPU's `v > m`), block sum of exp(x - max), then exp(x - max) / sum (recomputed, same value). A
// row whose max is -inf becomes zeros. y may be x: the row is only written after both reductions.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/softmax.h"

namespace amk::instructions {

/// SOFTMAX, whole block.
AMK_DEVICE_NOINLINE int32_t softmax_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  SoftmaxArgs* const s_args = shared_args<SoftmaxArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](SoftmaxArgs* out) { return decode_softmax(p, inst, out); }));
  const SoftmaxArgs& a = *s_args;
  const int64_t C = a.cols;
  const float neg_inf = -__int_as_float(0x7f800000);
  for (int64_t r = 0; r < a.rows; ++r) {
    float m = neg_inf;
    block_for(C, [&](int64_t c) { m = fmaxf(m, a.x.load(r * C + c)); });
    m = compute_max(m, ctx.s_red);
    if (m == neg_inf) {
      block_for(C, [&](int64_t c) { a.y.store(r * C + c, 0.0f); });
    } else {
      float s = 0.0f;
      block_for(C, [&](int64_t c) { s += expf(a.x.load(r * C + c) - m); });
      const float total = compute_sum(s, ctx.s_red);
      block_for(C, [&](int64_t c) { a.y.store(r * C + c, expf(a.x.load(r * C + c) - m) / total); });
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
