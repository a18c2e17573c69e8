// instructions/attention_common.cuh: the parts of ATTENTION_TILE on the device that its paths
// share (attention_tile.cuh's scalar and 16-byte paths, attention_mma.cuh's tensor-core path): the
// merge of the warps' online-softmax states and the store of a head, and ROPE_ATTENTION's
// prologue (the rotated q rows and the fresh key's rows in shared memory).
#pragma once
#include "instructions/attention_tile.h"
#include "instructions/device_common.cuh"
#include "instructions/elementwise.cuh"  // block_for

namespace amk::instructions {

/// Merge the per-warp states [acc[hd], m, l] in s_part (ctx.s_work + hd) and store head h: the
/// normalised output, or [acc, m, l] with PARTIAL_WRITE. Whole block.
AMK_DEVICE void attention_merge_store(const AttentionTileArgs& a, int64_t h, const DeviceCtx& ctx) {
  const int64_t hd = a.head_dim;
  const int nw = compute_warps();
  const float neg_inf = -__int_as_float(0x7f800000);
  const float* s_part = ctx.s_work + hd;
  compute_barrier();
  float big_m = neg_inf;
  for (int w = 0; w < nw; ++w) big_m = fmaxf(big_m, s_part[w * (hd + 2) + hd]);
  const int64_t o = h * a.out_width;
  block_for(hd, [&](int64_t d) {
    float num = 0.0f, den = 0.0f;
    if (big_m != neg_inf) {
      for (int w = 0; w < nw; ++w) {
        const float* pw = s_part + static_cast<int64_t>(w) * (hd + 2);
        if (pw[hd] == neg_inf) continue;
        const float wt = expf(pw[hd] - big_m);
        num = fmaf(wt, pw[d], num);
        den = fmaf(wt, pw[hd + 1], den);
      }
    }
    if (a.partial) {
      a.out.store(o + d, num);
      if (d == 0) {
        a.out.store(o + hd, big_m);
        a.out.store(o + hd + 1, den);
      }
    } else {
      a.out.store(o + d, den > 0.0f ? num / den : 0.0f);
    }
  });
}

/// attention_merge_store for the heads [h0, h0 + nh) at once: their per-warp states in s_parts
/// ([nh][nw][hd + 2]), one barrier for all of them. Whole block. The weighting repeats
/// attention_merge_store's on purpose: one helper for both moved ptxas' allocation of the whole
/// kernel (its own spill stores 64 -> 152 B, sm_90a; row 104: such spills slow every stage).
AMK_DEVICE void attention_merge_store_heads(const AttentionTileArgs& a, int64_t h0, int nh, const float* s_parts) {
  const int64_t hd = a.head_dim, row = hd + 2;
  const int nw = compute_warps();
  const float neg_inf = -__int_as_float(0x7f800000);
  compute_barrier();
  block_for(nh * hd, [&](int64_t e) {
    const int64_t hh = e / hd, d = e - hh * hd;
    const float* ph = s_parts + hh * nw * row;
    float big_m = neg_inf;
    for (int w = 0; w < nw; ++w) big_m = fmaxf(big_m, ph[w * row + hd]);
    float num = 0.0f, den = 0.0f;
    if (big_m != neg_inf) {
      for (int w = 0; w < nw; ++w) {
        const float* pw = ph + w * row;
        if (pw[hd] == neg_inf) continue;
        const float wt = expf(pw[hd] - big_m);
        num = fmaf(wt, pw[d], num);
        den = fmaf(wt, pw[hd + 1], den);
      }
    }
    const int64_t o = (h0 + hh) * a.out_width;
    if (a.partial) {
      a.out.store(o + d, num);
      if (d == 0) {
        a.out.store(o + hd, big_m);
        a.out.store(o + hd + 1, den);
      }
    } else {
      a.out.store(o + d, den > 0.0f ? num / den : 0.0f);
    }
  });
}

/// Shared rows of ROPE_ATTENTION: s_q = ctx.s_work [hd] (rotated q of the head), then after the
/// per-warp states the fresh key's k (rotated) and v rows [hd] each.
AMK_DEVICE float* fresh_rows(const AttentionTileArgs& a, const DeviceCtx& ctx) {
  return ctx.s_work + a.head_dim + static_cast<int64_t>(compute_warps()) * (a.head_dim + 2);
}

/// ROPE_ATTENTION, heads [h, h + nq) of one KV head: s_q = rope(q) of each ([nq][hd], rounded to
/// q's dtype; rows past the first overlap s_part, which is written only after the key loop) and,
/// when the window holds p, the fresh rows k = rope(k_new_g) and v = v_new_g rounded to the
/// cache's dtypes. One element per thread, every load of the block issued before any is used: one
/// round trip. Its own function so that its sin / cos (the accurate ones, as ROPE) take no
/// registers from the attention loops (inlined, the kernel spilled 300 bytes more and every stage
/// slowed). Whole block; ends with a barrier.
///
/// With contiguous operands and an F32 table (every lowered program) the operands' pointers and
/// dtypes are read from the shared Args into registers once, before any shared store: through
/// Tensor::load each element's loads waited on a chain of shared reads of the Args (which the
/// stores to s_q may alias, so the compiler re-read them), and the prologue took ~2 us even with
/// its data in L1 (docs/PERFORMANCE.md, row 86). Both paths rotate with rope_rotate.
AMK_DEVICE_NOINLINE void rope_fresh_prologue(const AttentionTileArgs& a, int64_t h, int nq, const DeviceCtx& ctx) {
  const int64_t hd = a.head_dim, g = h / a.group;
  const float pos = static_cast<float>(a.fresh_pos);
  float* s_q = ctx.s_work;
  float* s_k = fresh_rows(a, ctx);
  float* s_v = s_k + hd;
  const int64_t rows = nq + (a.fresh_key ? 2 : 0);  // the q rows, then k and v when the fresh key is this task's
  if (!a.generic_prologue && a.q.contiguous && a.k_new.contiguous && a.v_new.contiguous && a.inv_freq.contiguous &&
      a.inv_freq.dtype == AMK_DTYPE_F32) {
    const void* const qp = a.q.ptr;
    const void* const kp = a.k_new.ptr;
    const void* const vp = a.v_new.ptr;
    const float* const inv = static_cast<const float*>(a.inv_freq.ptr);
    const int32_t q_dt = a.q.dtype, kn_dt = a.k_new.dtype, vn_dt = a.v_new.dtype;
    const int32_t kc_dt = a.k.dtype, vc_dt = a.v.dtype;  // the rounding: q's, then the caches'
    const int64_t half = hd / 2;
    for (int64_t e = block_tid(); e < rows * hd; e += block_threads()) {
      const int64_t r = e / hd, d = e - r * hd;
      if (r == nq + 1) {
        s_v[d] = round_to_dtype(vc_dt, load_elem(vp, vn_dt, g * hd + d));
        continue;
      }
      const bool is_q = r < nq;
      const void* const x = is_q ? qp : kp;
      const int32_t x_dt = is_q ? q_dt : kn_dt;
      const int64_t base = is_q ? (h + r) * hd : g * hd, i = d < half ? d : d - half;
      const float f = inv[i];
      const float v = rope_rotate(load_elem(x, x_dt, base + i), load_elem(x, x_dt, base + i + half), f, pos, d >= half);
      (is_q ? s_q + r * hd : s_k)[d] = round_to_dtype(is_q ? q_dt : kc_dt, v);
    }
  } else {
    block_for(rows * hd, [&](int64_t e) {
      const int64_t r = e / hd, d = e - r * hd;
      if (r < nq) s_q[r * hd + d] = round_to_dtype(a.q.dtype, rope_element(a.q, (h + r) * hd, d, hd, a.inv_freq, pos));
      else if (r == nq) s_k[d] = round_to_dtype(a.k.dtype, rope_element(a.k_new, g * hd, d, hd, a.inv_freq, pos));
      else s_v[d] = round_to_dtype(a.v.dtype, a.v_new.load(g * hd + d));
    });
  }
  compute_barrier();
}

}  // namespace amk::instructions
