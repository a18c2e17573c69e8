// instructions/attention_combine.cuh: ATTENTION_COMBINE (18) on the device: one thread per output
// element (head h of the task's range, dim d) merges the split-KV partials (k operands x their
// stacked rows) exactly as the CPU reference does, in the same order: M = max m_p,
// w_p = exp(m_p - M) (0 for an empty partial), y = sum w_p acc_p / sum w_p l_p.
#pragma once
#include "instructions/attention_combine.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// Every partial a contiguous F32 tensor (what the lowering emits): plain pointers, and each
/// element's loads (m, l and acc of every partial) all issued before the first is used, so an
/// element costs one round trip instead of one per partial. Its own function, as the other plain-
/// pointer fast paths: the generic Tensor loads unrolled the same way grew every caller's local
/// memory (docs/PERFORMANCE.md, rows 28 and 33).
AMK_DEVICE_NOINLINE void attention_combine_f32(const AttentionCombineArgs& a) {
  const int64_t hd = a.head_dim, width = hd + 2;
  const int32_t rows = a.rows;  // 1 or 2 here (attention_combine_run)
  const int64_t row = a.parts[0].numel / rows;  // a stacked operand's row stride
  const float neg_inf = -__int_as_float(0x7f800000);
  const float* part[AMK_MAX_INPUTS];
#pragma unroll
  for (int q = 0; q < AMK_MAX_INPUTS; ++q) part[q] = static_cast<const float*>(a.parts[q < a.k ? q : 0].ptr);
  // With stacked partials the two rows of an element go to two neighbouring lanes, each holding
  // its row's k partials, and meet through shuffles: one round trip per element, as with one row,
  // and the registers of 8 partials (16 in one thread spilled 188 B here and moved the kernel's
  // allocation from 60 to 140 B). Every thread runs every round, so the shuffles see whole warps.
  // rows is 1 or 2: a shift and a mask, not a 64-bit division, per element.
  const int shift = rows == 2 ? 1 : 0;
  const int64_t total = ((a.h_end - a.h_begin) * hd) << shift;
  for (int64_t base = 0; base < total; base += block_threads()) {
    const int64_t i = base + block_tid();
    const bool live = i < total;
    const int64_t e = a.h_begin * hd + (live ? i >> shift : 0);
    const int64_t r = live ? i & shift : 0;
    const int64_t h = e / hd, d = e - h * hd, o = r * row + h * width;
    float m[AMK_MAX_INPUTS], l[AMK_MAX_INPUTS], acc[AMK_MAX_INPUTS];
#pragma unroll
    for (int q = 0; q < AMK_MAX_INPUTS; ++q) {
      if (live && q < a.k) {
        m[q] = part[q][o + hd];
        l[q] = part[q][o + hd + 1];
        acc[q] = part[q][o + d];
      }
    }
    float big_m = neg_inf;
#pragma unroll
    for (int q = 0; q < AMK_MAX_INPUTS; ++q)
      if (live && q < a.k) big_m = fmaxf(big_m, m[q]);
    if (rows == 2) big_m = fmaxf(big_m, gpu::shfl_xor(big_m, 1));  // M over both rows
    float lsum = 0.0f, s = 0.0f;
#pragma unroll
    for (int q = 0; q < AMK_MAX_INPUTS; ++q) {
      if (live && q < a.k) {
        const float w = m[q] == neg_inf ? 0.0f : expf(m[q] - big_m);
        lsum += w * l[q];
        if (w != 0.0f) s += w * acc[q];
      }
    }
    if (rows == 2) {  // row 0's sums + row 1's (the reference's grouping; a + b == b + a exactly)
      lsum += gpu::shfl_xor(lsum, 1);
      s += gpu::shfl_xor(s, 1);
    }
    if (live && r == 0) a.y.store(h * hd + d, lsum > 0.0f ? s / lsum : 0.0f);
  }
}

/// ATTENTION_COMBINE, whole block.
AMK_DEVICE_NOINLINE int32_t attention_combine_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AttentionCombineArgs* const s_args = shared_args<AttentionCombineArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](AttentionCombineArgs* out) { return decode_attention_combine(p, inst, out); }));
  const AttentionCombineArgs& a = *s_args;
  bool plain = true;
  for (int32_t q = 0; q < a.k; ++q) plain = plain && a.parts[q].contiguous && a.parts[q].dtype == AMK_DTYPE_F32;
  plain = plain && a.rows <= 2;
  if (plain) {
    attention_combine_f32(a);
    return AMK_DEVERR_NONE;
  }
  const int64_t hd = a.head_dim, width = hd + 2;
  const float neg_inf = -__int_as_float(0x7f800000);
  // Any float dtype and layout: a load-then-use loop over a runtime count of partials, one round
  // trip per load (measured slower unrolled with the generic loads: docs/PERFORMANCE.md, row 28).
  const int32_t n = a.k * a.rows;  // partial j: row j / k of operand j % k
  const int64_t row = a.parts[0].numel / a.rows;
  block_for((a.h_end - a.h_begin) * hd, [&](int64_t i) {
    const int64_t e = a.h_begin * hd + i;
    const int64_t h = e / hd, d = e - h * hd, o = h * width;
    float big_m = neg_inf;
    for (int32_t j = 0; j < n; ++j) big_m = fmaxf(big_m, a.parts[j % a.k].load((j / a.k) * row + o + hd));
    float l = 0.0f, s = 0.0f;
    for (int32_t r = 0; r < a.rows; ++r) {  // each row's sums, then the rows' (the reference's grouping)
      float lr = 0.0f, sr = 0.0f;
      for (int32_t q = 0; q < a.k; ++q) {
        const Tensor& t = a.parts[q];
        const int64_t base = r * row;
        const float mj = t.load(base + o + hd);
        const float w = mj == neg_inf ? 0.0f : expf(mj - big_m);
        lr += w * t.load(base + o + hd + 1);
        if (w != 0.0f) sr += w * t.load(base + o + d);
      }
      l += lr;
      s += sr;
    }
    a.y.store(h * hd + d, l > 0.0f ? s / l : 0.0f);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
