// instructions/attention_combine.cuh: ATTENTION_COMBINE (18) on the device: one thread per output
// element (head h, dim d) merges the k split-KV partials exactly as the CPU reference does, in the
// same order: M = max m_p, w_p = exp(m_p - M) (0 for an empty partial), y = sum w_p acc_p / sum w_p l_p.
#pragma once
#include "instructions/attention_combine.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// ATTENTION_COMBINE, whole block.
AMK_DEVICE_NOINLINE int32_t attention_combine_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AttentionCombineArgs* const s_args = shared_args<AttentionCombineArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](AttentionCombineArgs* out) { return decode_attention_combine(p, inst, out); }));
  const AttentionCombineArgs& a = *s_args;
  const int64_t hd = a.head_dim, width = hd + 2;
  const float neg_inf = -__int_as_float(0x7f800000);
  block_for(a.n_heads * hd, [&](int64_t e) {
    const int64_t h = e / hd, d = e - h * hd, o = h * width;
    // Every partial's (acc, m, l) first, all loads in flight at once: a loop of load-then-use
    // over a runtime count waits one memory round trip per load (24 for 8 partials, per element),
    // and this task is alone on the critical path between attention and o_proj (H100, 1B shape,
    // 8 partials: 24 us per layer). Unused values of an empty partial are loaded and ignored.
    float m[AMK_MAX_INPUTS], l[AMK_MAX_INPUTS], acc[AMK_MAX_INPUTS];
#pragma unroll
    for (int32_t q = 0; q < AMK_MAX_INPUTS; ++q) {
      if (q < a.k) {
        m[q] = a.parts[q].load(o + hd);
        l[q] = a.parts[q].load(o + hd + 1);
        acc[q] = a.parts[q].load(o + d);
      }
    }
    float big_m = neg_inf;
#pragma unroll
    for (int32_t q = 0; q < AMK_MAX_INPUTS; ++q)
      if (q < a.k) big_m = fmaxf(big_m, m[q]);
    float sum_l = 0.0f, s = 0.0f;
#pragma unroll
    for (int32_t q = 0; q < AMK_MAX_INPUTS; ++q) {
      if (q < a.k) {
        const float w = m[q] == neg_inf ? 0.0f : expf(m[q] - big_m);
        sum_l += w * l[q];
        if (w != 0.0f) s += w * acc[q];
      }
    }
    a.y.store(h * hd + d, sum_l > 0.0f ? s / sum_l : 0.0f);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
