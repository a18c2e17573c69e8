// instructions/attention_tile.cuh: ATTENTION_TILE (7) on the device: single-query GQA attention,
// block-cooperative with an online softmax. Per q head, warps take keys round-robin (kKeys keys per
// warp in flight, their loads issued before any use); a lane holds dims lane, lane + warp, ... of
// q, acc and the K/V rows. Each warp keeps (m, l, acc) over its keys; the warps' states merge in
// shared memory. PARTIAL_WRITE stores [acc, m, l] unnormalised (F32) for ATTENTION_COMBINE; an
// empty or fully masked window gives m = -inf, l = 0, acc = 0 (and 0 when normalised).
// FUSED ROPE_ATTENTION runs the same code after rope_fresh_prologue has put the rotated q and the
// fresh key's k / v rows into shared memory; warp 0 adds that key after its cache keys.
// BF16 / F16 caches of head_dim 64 take attention_mma.cuh's tensor-core path instead on CUDA sm_80+
// (a KV head's q heads in one pass); -DAMK_ATTN_NO_MMA keeps them here (docs/PERFORMANCE.md row 103).
#pragma once
#include "instructions/attention_common.cuh"
#include "instructions/attention_mma.cuh"
#include "instructions/attention_softmax.h"
#include "instructions/attention_tile.h"
#include "instructions/elementwise.cuh"
#include "instructions/gemv_core.cuh"

namespace amk::instructions {

/// One head, 16-byte K/V loads: a key's row of hd elements is read by L = hd / E lanes (E elements
/// each), so one warp load covers kWarpSize / L keys and each lane keeps kU such loads of K and of
/// V in flight. The L lanes of a key reduce its score with xor shuffles; each lane runs its own
/// online softmax over the keys it saw, then the lanes of a warp merge (xor shuffles across key
/// slots) and the warps merge in shared memory (attention_merge_store). At ctx 128 and head_dim 64
/// that is one round trip for all keys, where attention_head needs three. Preconditions
/// (attention_vec_ok): contiguous K/V of dtype DT, 16-byte aligned rows, L a power of two <= warp.
#ifdef AMK_ATTN_Q_GENERIC
inline constexpr bool kAttnQGeneric = true;
#else
inline constexpr bool kAttnQGeneric = false;
#endif  // AMK_ATTN_Q_GENERIC

template <int DT>
AMK_DEVICE void attention_head_vec(const AttentionTileArgs& a, int64_t h, const DeviceCtx& ctx) {
  constexpr int E = DT == AMK_DTYPE_F32 ? 4 : 8;  // elements per 16 bytes
  constexpr int kU = 4;
  constexpr int64_t kEsize = DT == AMK_DTYPE_F32 ? 4 : 2;
  const int64_t hd = a.head_dim, kv_row = a.n_kv_heads * hd, g = h / a.group;
  const int L = static_cast<int>(hd / E);
  const int kpw = gpu::kWarpSize / L;  // keys per warp load
  const int lane = gpu::lane_id(), warp = gpu::warp_id(), nw = compute_warps();
  const int sub = lane % L, kslot = lane / L;
  float* s_part = ctx.s_work + hd;  // [nw][hd + 2]
  compute_barrier();  // the previous head's merge has read s_part
  // q of dtype DT, contiguous and 16-byte aligned: one raw load issued here and unpacked only
  // after the first K / V loads are issued, so its round trip overlaps theirs (per element
  // through Tensor::load, q was a round trip of its own before any K / V load). -DAMK_ATTN_Q_GENERIC
  // for the A/B (docs/PERFORMANCE.md, row 73).
  // ROPE_ATTENTION: q rotated into s_q by the prologue (its loads are that round trip's).
  const char* qsrc = static_cast<const char*>(a.q.ptr) + (h * hd + sub * E) * kEsize;
  bool q_pending = !kAttnQGeneric && !a.rope_fresh && a.q.contiguous && a.q.dtype == DT &&
                   (reinterpret_cast<uintptr_t>(qsrc) & 15u) == 0;
  float q[E] = {};
  uint4 q_raw = make_uint4(0u, 0u, 0u, 0u);
  if (q_pending) {
    q_raw = *reinterpret_cast<const uint4*>(qsrc);
  } else if (a.rope_fresh) {
    rope_fresh_prologue(a, h, 1, ctx);
#pragma unroll
    for (int e = 0; e < E; ++e) q[e] = ctx.s_work[sub * E + e];
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e) q[e] = a.q.load(h * hd + sub * E + e);
  }
  AttnState<E> st = attn_empty<E>();
  const char* kbase = static_cast<const char*>(a.k.ptr) + (g * hd + sub * E) * kEsize;
  const char* vbase = static_cast<const char*>(a.v.ptr) + (g * hd + sub * E) * kEsize;
  const int64_t row_bytes = kv_row * kEsize;
  const int64_t round = static_cast<int64_t>(nw) * kpw;  // keys per load round of the block
  // q . k for the key whose E dims this lane holds in `kr`, summed over the key's L lanes.
  const auto key_dot = [&](const uint4& kr) {
    float kf[E];
    unpack16<DT>(kr, kf);
    float part = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) part = fmaf(q[e], kf[e], part);
    for (int o = L / 2; o >= 1; o >>= 1) part += gpu::shfl_xor(part, o);
    return part;
  };
  // jb is warp-uniform (every lane runs every shuffle); each lane's key is jb + u * round + kslot.
  for (int64_t jb = a.j_begin + static_cast<int64_t>(warp) * kpw; jb < a.j_end; jb += round * kU) {
    uint4 kk[kU], vv[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t j = jb + u * round + kslot;
      if (j < a.j_end) {
        kk[u] = *reinterpret_cast<const uint4*>(kbase + j * row_bytes);
        vv[u] = *reinterpret_cast<const uint4*>(vbase + j * row_bytes);
      } else {
        kk[u] = make_uint4(0u, 0u, 0u, 0u);
        vv[u] = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    if (q_pending) {  // this thread's first round, after its K / V loads are issued
      unpack16<DT>(q_raw, q);
      q_pending = false;
    }
#ifdef AMK_ATTN_BLOCK_SOFTMAX
    // The round's scores first (-inf past the window), then one max, one rescale and kU
    // independent exponentials, where attn_add_key chains max -> 2 exp -> rescale per key.
    const float neg_inf = -__int_as_float(0x7f800000);
    float sc[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const float part = key_dot(kk[u]);
      const int64_t j = jb + u * round + kslot;
      sc[u] = neg_inf;
      if (j < a.j_end) {
        sc[u] = a.scale * part;
        if (a.has_bias) sc[u] += a.bias.load(j);
      }
    }
    attn_add_block(st, sc, [&](int u, float(&v)[E]) { unpack16<DT>(vv[u], v); });
#else
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const float part = key_dot(kk[u]);
      const int64_t j = jb + u * round + kslot;
      if (j >= a.j_end) continue;
      float sj = a.scale * part;
      if (a.has_bias) sj += a.bias.load(j);
      float v[E];
      unpack16<DT>(vv[u], v);
      attn_add_key(st, sj, v);
    }
#endif  // AMK_ATTN_BLOCK_SOFTMAX
  }
  if (a.fresh_key && warp == 0) {  // ROPE_ATTENTION: key p, from the prologue's rows
    const float* s_k = fresh_rows(a, ctx);
    float part = 0.0f, v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      part = fmaf(q[e], s_k[sub * E + e], part);
      v[e] = s_k[hd + sub * E + e];
    }
    for (int o = L / 2; o >= 1; o >>= 1) part += gpu::shfl_xor(part, o);  // within the key's L lanes
    if (kslot == 0) attn_add_key(st, a.scale * part, v);
  }
  for (int o = L; o < gpu::kWarpSize; o <<= 1) {  // merge the key slots of the same dims
    AttnState<E> other;
    other.m = gpu::shfl_xor(st.m, o);
    other.l = gpu::shfl_xor(st.l, o);
#pragma unroll
    for (int e = 0; e < E; ++e) other.acc[e] = gpu::shfl_xor(st.acc[e], o);
    attn_merge(st, other);
  }
  float* mine = s_part + static_cast<int64_t>(warp) * (hd + 2);
  if (kslot == 0) {
#pragma unroll
    for (int e = 0; e < E; ++e) mine[sub * E + e] = st.acc[e];
  }
  if (lane == 0) {
    mine[hd] = st.m;
    mine[hd + 1] = st.l;
  }
  attention_merge_store(a, h, ctx);
}

/// Whether attention_head_vec may run: K and V contiguous, one float dtype, 16-byte aligned rows
/// and head slices, and a row of hd elements spread over a power-of-two number of lanes.
/// attention_layout_of (attention_tile.h) repeats these conditions for the tensor-core path on
/// the host; sharing one function moved this kernel's code (PERFORMANCE row 171), so keep the two
/// in step by hand.
AMK_DEVICE bool attention_vec_ok(const AttentionTileArgs& a) {
  if (!a.k.contiguous || !a.v.contiguous || a.k.dtype != a.v.dtype) return false;
  const int64_t esize = a.k.dtype == AMK_DTYPE_F32 ? 4 : (a.k.dtype == AMK_DTYPE_BF16 || a.k.dtype == AMK_DTYPE_F16 ? 2 : 0);
  if (esize == 0 || (a.head_dim * esize) % 16 != 0) return false;
  if (((reinterpret_cast<uintptr_t>(a.k.ptr) | reinterpret_cast<uintptr_t>(a.v.ptr)) & 15u) != 0) return false;
  const int64_t lanes = a.head_dim * esize / 16;
  return lanes <= gpu::kWarpSize && (lanes & (lanes - 1)) == 0;
}

/// One head with PER dims per lane (hd <= PER * warp size).
template <int PER>
AMK_DEVICE void attention_head(const AttentionTileArgs& a, int64_t h, const DeviceCtx& ctx) {
  // Keys in flight per warp, bounded by registers. 8 at head_dim 64 measured slower than 4 on an
  // H200 (ATTENTION_TILE 24 -> 35 us: the register budget of the 512-thread block, not the round
  // trips, is what binds; docs/PERFORMANCE.md row 18).
  constexpr int kKeys = PER >= 8 ? 2 : 4;
  const int64_t hd = a.head_dim, kv_row = a.n_kv_heads * hd, g = h / a.group;
  const int lane = gpu::lane_id(), warp = gpu::warp_id(), nw = compute_warps();
  float* s_q = ctx.s_work;
  float* s_part = ctx.s_work + hd;  // [nw][hd + 2]
  compute_barrier();  // the previous head's merge has read s_part
  if (a.rope_fresh) rope_fresh_prologue(a, h, 1, ctx);  // s_q and the fresh rows, then a barrier
  else block_for(hd, [&](int64_t d) { s_q[d] = a.q.load(h * hd + d); });
  compute_barrier();
  float q[PER];
#pragma unroll
  for (int t = 0; t < PER; ++t) {
    const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
    q[t] = d < hd ? s_q[d] : 0.0f;
  }
  AttnState<PER> st = attn_empty<PER>();
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
      attn_add_key(st, sj, vv[u]);
    }
  }
  if (a.fresh_key && warp == 0) {  // ROPE_ATTENTION: key p, from the prologue's rows
    const float* s_k = fresh_rows(a, ctx);
    float part = 0.0f, vf[PER];
#pragma unroll
    for (int t = 0; t < PER; ++t) {
      const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
      part = fmaf(q[t], d < hd ? s_k[d] : 0.0f, part);
      vf[t] = d < hd ? s_k[hd + d] : 0.0f;
    }
    attn_add_key(st, a.scale * gpu::warp_sum(part), vf);
  }
  float* mine = s_part + static_cast<int64_t>(warp) * (hd + 2);
#pragma unroll
  for (int t = 0; t < PER; ++t) {
    const int64_t d = lane + static_cast<int64_t>(t) * gpu::kWarpSize;
    if (d < hd) mine[d] = st.acc[t];
  }
  if (lane == 0) {
    mine[hd] = st.m;
    mine[hd + 1] = st.l;
  }
  attention_merge_store(a, h, ctx);
}

/// ATTENTION_TILE, whole block. BAD_PARAMS for head_dim > kDeviceMaxHeadDim.
AMK_DEVICE_NOINLINE int32_t attention_tile_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AttentionTileArgs* const s_args = shared_args<AttentionTileArgs>();  // decoded once per block (decode_once)
  AMK_PROBE(1, ctx);
  AMK_TRY_DEV(decode_once(
      s_args, ctx, [&](AttentionTileArgs* out) { return decode_attention_tile(p, inst, out); },
      [&](AttentionTileArgs* out) { return bind_attention_tile_step(p, inst, out); }));
  AMK_PROBE(2, ctx);
  const AttentionTileArgs& a = *s_args;
  if (a.head_dim > kDeviceMaxHeadDim || attention_smem_floats(a.head_dim, compute_warps()) > ctx.work_floats)
    return AMK_DEVERR_BAD_PARAMS;
  constexpr int kLanes = gpu::kWarpSize;
  const bool vec = attention_vec_ok(a);  // block-uniform (shared Args)
#ifdef AMK_ATTN_MMA_PATH
  // The tensor-core path's layout was checked where the operands were decoded (attention_layout_of).
  if (a.mma_layout && (a.head_dim == 64 || kAttnMmaHd128)) {  // a KV head's q heads a pass
    for (int64_t h = a.h_begin; h < a.h_end;) {
      int64_t stop = (h / a.group + 1) * a.group;  // the end of h's KV head
      if (stop > h + kMmaHeads) stop = h + kMmaHeads;
      if (stop > a.h_end) stop = a.h_end;
      const int nh = static_cast<int>(stop - h);
      const bool bf16 = a.k.dtype == AMK_DTYPE_BF16;
#ifdef AMK_ATTN_TWICE
      // -DAMK_ATTN_TWICE (measurement only, with -DAMK_TRACE_PROBE=3 / 7): the same heads run once
      // before, unprobed (the same outputs, stored twice), so that the probed run finds its code
      // and data warm: probe 3 - probe 7 of such a build against a plain one is what a cold
      // attention_heads_mma entry costs (docs/PERFORMANCE.md row 170).
      for (int pass = 0; pass < 2; ++pass) {
        DeviceCtx c = ctx;
#ifdef AMK_TRACE_PROBE
        if (pass == 0) c.probe = nullptr;
#endif  // AMK_TRACE_PROBE
#else
      {
        const DeviceCtx& c = ctx;
#endif  // AMK_ATTN_TWICE
        AMK_PROBE(7, c);  // the call site
        if (a.head_dim == 64) {
          if (bf16) attention_heads_mma<AMK_DTYPE_BF16, 64>(a, h, nh, c);
          else attention_heads_mma<AMK_DTYPE_F16, 64>(a, h, nh, c);
        } else if constexpr (kAttnMmaHd128) {
          if (bf16) attention_heads_mma<AMK_DTYPE_BF16, 128>(a, h, nh, c);
          else attention_heads_mma<AMK_DTYPE_F16, 128>(a, h, nh, c);
        }
      }
      h = stop;
    }
    return AMK_DEVERR_NONE;
  }
#endif  // AMK_ATTN_MMA_PATH
  for (int64_t h = a.h_begin; h < a.h_end; ++h) {
    if (vec) {
      if (a.k.dtype == AMK_DTYPE_BF16) attention_head_vec<AMK_DTYPE_BF16>(a, h, ctx);
      else if (a.k.dtype == AMK_DTYPE_F16) attention_head_vec<AMK_DTYPE_F16>(a, h, ctx);
      else attention_head_vec<AMK_DTYPE_F32>(a, h, ctx);
    } else if (a.head_dim <= 2 * kLanes) attention_head<2>(a, h, ctx);
    else if (a.head_dim <= 4 * kLanes) attention_head<4>(a, h, ctx);
    else attention_head<kDeviceMaxHeadDim / kLanes>(a, h, ctx);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
