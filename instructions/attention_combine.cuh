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
  // A load-then-use loop over a runtime count of partials: one round trip per load. Unrolling it
  // to issue every partial's loads at once was measured slower (H100, 1B shape, max_seq 8192, 4
  // partials: 2.47 -> 2.71 ms/token, same machine): the unrolled generic Tensor loads grew the
  // kernel's local memory (488 -> 584 B/thread) and its local loads/stores (380 -> 496 in the
  // SASS); docs/PERFORMANCE.md, row 28.
  block_for(a.n_heads * hd, [&](int64_t e) {
    const int64_t h = e / hd, d = e - h * hd, o = h * width;
    float big_m = neg_inf;
    for (int32_t q = 0; q < a.k; ++q) big_m = fmaxf(big_m, a.parts[q].load(o + hd));
    float l = 0.0f, s = 0.0f;
    for (int32_t q = 0; q < a.k; ++q) {
      const float mq = a.parts[q].load(o + hd);
      const float w = mq == neg_inf ? 0.0f : expf(mq - big_m);
      l += w * a.parts[q].load(o + hd + 1);
      if (w != 0.0f) s += w * a.parts[q].load(o + d);
    }
    a.y.store(h * hd + d, l > 0.0f ? s / l : 0.0f);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
