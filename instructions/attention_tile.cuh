// instructions/attention_tile.cuh: ATTENTION_TILE (7) on the device: single-query GQA attention,
// block-cooperative with an online softmax. Per q head, warps take keys round-robin (kKeys keys per
// warp in flight, their loads issued before any use); a lane holds dims lane, lane + warp, ... of
// q, acc and the K/V rows. Each warp keeps (m, l, acc) over its keys; the warps' states merge in
// shared memory. PARTIAL_WRITE stores [acc, m, l] unnormalised (F32) for ATTENTION_COMBINE; an
// empty or fully masked window gives m = -inf, l = 0, acc = 0 (and 0 when normalised).
#pragma once
#include "instructions/attention_tile.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// One head with PER dims per lane (hd <= PER * warp size).
template <int PER>
AMK_DEVICE void attention_head(const AttentionTileArgs& a, int64_t h, const DeviceCtx& ctx) {
  // Keys in flight per warp, bounded by registers. 8 at head_dim 64 measured slower than 4 on an
  // H200 (ATTENTION_TILE 24 -> 35 us: the register budget of the 512-thread block, not the round
  // trips, is what binds; docs/PERFORMANCE.md row 18).
  constexpr int kKeys = PER >= 8 ? 2 : 4;
  const int64_t hd = a.head_dim, kv_row = a.n_kv_heads * hd, g = h / a.group;
  const int lane = gpu::lane_id(), warp = gpu::warp_id(), nw = gpu::warp_count();
  const float neg_inf = -__int_as_float(0x7f800000);
  float* s_q = ctx.s_work;
  float* s_part = ctx.s_work + hd;  // [nw][hd + 2]
  __syncthreads();  // the previous head's merge has read s_part
  block_for(hd, [&](int64_t d) { s_q[d] = a.q.load(h * hd + d); });
  __syncthreads();
  float q[PER], acc[PER];
#pragma unroll
  for (int t = 0; t < PER; ++t) {
    const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
    q[t] = d < hd ? s_q[d] : 0.0f;
    acc[t] = 0.0f;
  }
  float m = neg_inf, l = 0.0f;
  for (int64_t j0 = a.j_begin + warp; j0 < a.j_end; j0 += static_cast<int64_t>(nw) * kKeys) {
    float kk[kKeys][PER], vv[kKeys][PER], s[kKeys];
#pragma unroll
    for (int u = 0; u < kKeys; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * nw;
#pragma unroll
      for (int t = 0; t < PER; ++t) {
        const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
        const bool ok = j < a.j_end && d < hd;
        kk[u][t] = ok ? a.k.load(j * kv_row + g * hd + d) : 0.0f;
        vv[u][t] = ok ? a.v.load(j * kv_row + g * hd + d) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kKeys; ++u) {
      float part = 0.0f;
#pragma unroll
      for (int t = 0; t < PER; ++t) part = fmaf(q[t], kk[u][t], part);
      s[u] = gpu::warp_sum(part);
    }
#pragma unroll
    for (int u = 0; u < kKeys; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * nw;
      if (j >= a.j_end) break;
      float sj = a.scale * s[u];
      if (a.has_bias) sj += a.bias.load(j);
      const float m_new = fmaxf(m, sj);
      if (m_new == neg_inf) continue;  // masked key, nothing seen yet
      const float alpha = expf(m - m_new);  // 0 when m is -inf
      const float pj = expf(sj - m_new);
      l = l * alpha + pj;
#pragma unroll
      for (int t = 0; t < PER; ++t) acc[t] = fmaf(pj, vv[u][t], acc[t] * alpha);
      m = m_new;
    }
  }
  float* mine = s_part + static_cast<int64_t>(warp) * (hd + 2);
#pragma unroll
  for (int t = 0; t < PER; ++t) {
    const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
    if (d < hd) mine[d] = acc[t];
  }
  if (lane == 0) {
    mine[hd] = m;
    mine[hd + 1] = l;
  }
  __syncthreads();
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

/// ATTENTION_TILE, whole block. BAD_PARAMS for head_dim > kDeviceMaxHeadDim.
AMK_DEVICE_NOINLINE int32_t attention_tile_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AttentionTileArgs* const s_args = shared_args<AttentionTileArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(
      s_args, ctx, [&](AttentionTileArgs* out) { return decode_attention_tile(p, inst, out); },
      [&](AttentionTileArgs* out) { return bind_attention_tile_step(p, inst, out); }));
  const AttentionTileArgs& a = *s_args;
  if (a.head_dim > kDeviceMaxHeadDim || attention_smem_floats(a.head_dim, gpu::warp_count()) > ctx.work_floats)
    return AMK_DEVERR_BAD_PARAMS;
  constexpr int kLanes = gpu::kWarpSize;
  for (int64_t h = a.h_begin; h < a.h_end; ++h) {
    if (a.head_dim <= 2 * kLanes) attention_head<2>(a, h, ctx);
    else if (a.head_dim <= 4 * kLanes) attention_head<4>(a, h, ctx);
    else attention_head<kDeviceMaxHeadDim / kLanes>(a, h, ctx);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
