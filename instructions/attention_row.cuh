// instructions/attention_row.cuh: the weight stream's x staging for FUSED ATTENTION_GEMV_ADD
// (kGemvAttention, attention_gemv.h): every o_proj tile computes the layer's whole attention from
// L2 into its staged x, so that o_proj waits on q / k / v directly instead of on an attention
// stage (docs/ATTENTION_IN_O.md; the stage and its hop were ~10 us of a ~59 us Llama-1B layer on
// the H200, docs/PERFORMANCE.md row 173).
//
// One warp per KV head, each over the whole window, so no warp merges with another: warp w takes
// KV heads w, w + warps, ... and runs that head's query heads (its GQA group, <= 8) as the rows of
// attention_mma.cuh's m16n8k16 tiles, 16 keys a block. Measured on the H200 (PERFORMANCE rows
// 174-180), the tile's attention took ~20 us where the attention stage it replaces costs ~12:
// the rope prologue 6.2 us (now 2.4: one cos / sin table per step) and the walk ~1.1-1.2 us a
// block, as much with K / V in shared memory (-DAMK_EMU_ATTN_ROW_SMEM) or on warm code
// (-DAMK_ATTN_ROW_TWICE): the block step's own chain bound it, not the window's loads. Timed alone
// (amk-walk-probe, rows 179-180), a block now costs 783 cycles for one warp and 1160 for eight
// (1205 / 1589 before row 180): exp2 without exp2f's fix-up, no branch for an empty state, whole
// accumulator quads, one reciprocal in place of 16 divisions, unmasked full blocks. Loading the
// next block during this one's step (-DAMK_ATTN_ROW_PIPELINED) is faster still alone (660 / 1069)
// but spills in the megakernel. Two whole blocks in flight (row 175's -DAMK_ATTN_ROW_DOUBLE,
// since removed) spilled too; asking L2 for the window's lines first only added L2 traffic. The
// block step shares only its weights (online_block_weights, inline: both kernels' SASS unchanged)
// with attention_heads_mma and otherwise repeats it on purpose (a shared step would move that
// function's registers, and every earlier change of its allocation moved the whole kernel's:
// PERFORMANCE rows 104, 139).
// Each value is rounded to q's dtype, as the unfused program's attention buffer holds it.
// CUDA sm_80+ (the tensor cores); elsewhere the host never plans it (no ring) and the kernel's
// check refuses it.
#pragma once
#include "instructions/attention_gemv.h"
#include "instructions/attention_mma.cuh"
#include "instructions/gemv_core.cuh"

#include <type_traits>

namespace amk::instructions {

#ifdef AMK_ATTN_MMA_PATH

/// KV head g's query heads over keys [j_begin, end) (key j_end..end-1 is the fresh one, from
/// s_fresh) into s_x: the normalised output of head g * group + gq at its K positions. One warp.
template <int DT>
AMK_DEVICE_NOINLINE void attention_row_kv_head(const AttentionRowPlan& rp, int32_t g, int32_t j_begin, int32_t j_end,
                                      int32_t end, const float* s_q, const float* s_fresh, float* s_x, bool planar) {
  constexpr int HD = 64;
  constexpr int kChunksK = HD / (8 * 4), kChunksV = HD / (8 * 8), kSteps = HD / 16, kTiles = HD / 8;
  // The three work-area pointers are shared memory: said so, their accesses are ld / st.shared
  // with 32-bit addresses instead of generic 64-bit ones (the attention kernel's spill stores
  // 128 -> 124 B, PERFORMANCE row 180).
  __builtin_assume(__isShared(s_q));
  __builtin_assume(__isShared(s_fresh));
  __builtin_assume(__isShared(s_x));
  const float neg_inf = -__int_as_float(0x7f800000);
  const int lane = gpu::lane_id(), gq = lane >> 2, tq = lane & 3;
  const int nh = rp.group;
  const int32_t K = rp.n_heads * HD;
  const int32_t row_bytes = rp.n_kv_heads * HD * 2;
  const char* kbase = static_cast<const char*>(rp.k) + g * HD * 2;
  const char* vbase = static_cast<const char*>(rp.v) + g * HD * 2;
  const float* fresh_k = s_fresh + g * 2 * HD;
  const float* fresh_v = fresh_k + HD;
  uint4 qc[kChunksK];
#pragma unroll
  for (int i = 0; i < kChunksK; ++i)
    qc[i] = gq < nh ? pack16<DT>(s_q + (g * nh + gq) * HD + 8 * (tq + 4 * i)) : make_uint4(0u, 0u, 0u, 0u);
#ifdef AMK_EMU_ATTN_ROW_SMEM
  // Measurement only (PERFORMANCE row 178): the cached keys' K / V rows come from shared memory
  // (s_q's 8 KiB, rows 512 bytes apart: the bank pattern of a window staged in a ring slot, whose
  // rows are 1 KiB apart), so the walk costs its arithmetic and shared loads alone: the ceiling of
  // streaming the window through the weight ring. Wrong results: --baseline none.
  const char* const s_win = reinterpret_cast<const char*>(s_q);
#endif  // AMK_EMU_ATTN_ROW_SMEM
  const auto row16 = [&](const char* base, const float* fresh, int32_t j, int chunk) {
#ifdef AMK_EMU_ATTN_ROW_SMEM
    if (j < j_end)
      return *reinterpret_cast<const uint4*>(s_win + (((j & 15) * 512 + (base == vbase ? 256 : 0) + (g & 1) * 128 + chunk * 16) & 8191));
#endif  // AMK_EMU_ATTN_ROW_SMEM
    if (j < j_end) return ld_global16(base + j * row_bytes + chunk * 16);
    if (j < end) return pack16<DT>(fresh + chunk * 8);
    return make_uint4(0u, 0u, 0u, 0u);
  };
  struct Block {  // 16 keys: K for the two key n-tiles, V of keys 2tq, 2tq + 1, 2tq + 8, 2tq + 9
    uint4 k[2][kChunksK], v[4][kChunksV];
  };
  // Blocks whose 16 keys are all cache rows (every block but the window's last) load from two
  // per-lane row pointers (K, V) stepped by 16 rows, the other rows at fixed offsets from them,
  // with no per-load row test or 64-bit product (row16's were ~1/3 of a block's instructions,
  // PERFORMANCE row 179). Rows as row16 reads them: K rows jb + 8n + gq at chunks tq + 4i, V rows
  // jb + 2tq + (r & 1) + 8 (r >> 1) at chunk gq. The full blocks run first, unmasked; the last
  // block (the window's tail and the fresh key) runs masked with row16's loads.
  const char* pk = kbase + (j_begin + gq) * row_bytes + tq * 16;
  const char* pv = vbase + (j_begin + 2 * tq) * row_bytes + gq * 16;
  const int32_t rows8 = 8 * row_bytes, step16 = 16 * row_bytes;
  const auto load_full_k = [&](Block& b) __attribute__((always_inline)) {
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int i = 0; i < kChunksK; ++i) b.k[n][i] = ld_global16(pk + n * rows8 + 64 * i);
  };
  const auto load_full_v = [&](Block& b) __attribute__((always_inline)) {
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int i = 0; i < kChunksV; ++i)
        b.v[r][i] = ld_global16(pv + ((r & 1) * row_bytes + (r >> 1) * rows8) + 128 * i);
  };
  const auto load_row16 = [&](int32_t jb, Block& b) __attribute__((always_inline)) {
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int i = 0; i < kChunksK; ++i) b.k[n][i] = row16(kbase, fresh_k, jb + 8 * n + gq, tq + 4 * i);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int i = 0; i < kChunksV; ++i)
        b.v[r][i] = row16(vbase, fresh_v, jb + 2 * tq + (r & 1) + 8 * (r >> 1), gq + 8 * i);
  };
  const float scale2 = rp.scale * 1.4426950408889634f;  // log2 units: exp2 per weight
  // Whole accumulator quads (rows 8-15 of D stay 0): no zeros moved into C before every mma
  // (amk-walk-probe, row 180: -3% a block for one warp, -7% for eight).
  float m = neg_inf, l = 0.0f, acc[kTiles][4] = {};
  // One block of keys into (m, l, acc). after_scores / after_operands run once the scores have
  // read the block's K and once the output's operands are taken from its V (the pipelined
  // variant's loads of the next block); kMasked for the last block (keys past `end`).
  const auto step = [&](int32_t jb, Block& cur, auto masked, const auto& after_scores, const auto& after_operands)
                        __attribute__((always_inline)) {
    constexpr bool kMasked = decltype(masked)::value;
    float s[2][4] = {};  // [key n-tile][key 2tq + e]
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        const int i = st >> 1, w = (st & 1) * 2;
        mma_rows8<DT>(s[n], word(qc[i], w), word(qc[i], w + 1), word(cur.k[n][i], w), word(cur.k[n][i], w + 1));
      }
    after_scores();
    float mx = neg_inf;
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[n][e] *= scale2;
        if (kMasked && jb + 8 * n + 2 * tq + e >= end) s[n][e] = neg_inf;
        mx = fmaxf(mx, s[n][e]);
      }
    mx = fmaxf(mx, gpu::shfl_xor(mx, 1));  // a head's row is spread over its quad
    mx = fmaxf(mx, gpu::shfl_xor(mx, 2));
    const float m_new = fmaxf(m, mx);
    // With the epilogue's reciprocal, online_block_weights' exp2 is -30% a block (row 180).
    uint32_t p_big[2], p_small[2];
    const float alpha = online_block_weights<DT>(s, m, m_new, l, p_big, p_small);
    m = m_new;
    uint32_t b_lo[kTiles], b_hi[kTiles];  // V's B operands: the high or low halves of two keys' words
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const int i = j >> 3, w = (j & 7) >> 1;
      const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;
      b_lo[j] = __byte_perm(word(cur.v[0][i], w), word(cur.v[1][i], w), sel);
      b_hi[j] = __byte_perm(word(cur.v[2][i], w), word(cur.v[3][i], w), sel);
    }
    after_operands();
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      acc[j][0] *= alpha;
      acc[j][1] *= alpha;
      mma_rows8<DT>(acc[j], p_big[0], p_big[1], b_lo[j], b_hi[j]);
      mma_rows8<DT>(acc[j], p_small[0], p_small[1], b_lo[j], b_hi[j]);
    }
  };
  const auto nothing = [] {};
  const std::integral_constant<bool, false> unmasked{};
  const std::integral_constant<bool, true> masked{};
#if !defined(AMK_ATTN_ROW_BRANCHY_LOADS) && !defined(AMK_EMU_ATTN_ROW_SMEM)
  const int32_t n_full = j_end > j_begin ? (j_end - j_begin) / 16 : 0;
#else
  const int32_t n_full = 0;  // every block through row16
#endif  // AMK_ATTN_ROW_BRANCHY_LOADS
  Block cur;
#ifdef AMK_ATTN_ROW_PIPELINED
  // A/B (PERFORMANCE row 180): the next full block's K loaded once the scores have read this
  // block's, its V once the output's operands are taken from this one's, in the registers the
  // block already holds. The last full block loads itself again (its pointers stay), so that
  // every load is unconditional: predicated loads into the block made ptxas spill it.
  if (n_full > 0) {
    load_full_k(cur);
    load_full_v(cur);
  }
  for (int32_t b = 0; b < n_full; ++b) {  // warp-uniform
    const int32_t next = b + 1 < n_full ? step16 : 0;
    step(
        j_begin + 16 * b, cur, unmasked,
        [&] {
          pk += next;
          load_full_k(cur);
        },
        [&] {
          pv += next;
          load_full_v(cur);
        });
  }
#else
  for (int32_t b = 0; b < n_full; ++b) {  // warp-uniform
    load_full_k(cur);
    load_full_v(cur);
    pk += step16;
    pv += step16;
    step(j_begin + 16 * b, cur, unmasked, nothing, nothing);
  }
#endif  // AMK_ATTN_ROW_PIPELINED
  for (int32_t jb = j_begin + 16 * n_full; jb < end; jb += 16) {  // the tail: one block unless n_full is 0
    load_row16(jb, cur);
    step(jb, cur, masked, nothing, nothing);
  }
  l += gpu::shfl_xor(l, 1);
  l += gpu::shfl_xor(l, 2);
  if (gq >= nh) return;
  const int32_t h = g * nh + gq;
  // One correctly rounded reciprocal and a product per value: within an ulp of acc / l before the
  // rounding to 16 bits, where 16 IEEE divisions (a check and a call each) were ~1/4 of a 128-key
  // walk (amk-walk-probe, PERFORMANCE row 180).
  const float r = l > 0.0f ? __frcp_rn(l) : 0.0f;
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int32_t k = h * HD + j + 8 * (2 * tq + e);  // attention_heads_mma's write_state order
      const float v = acc[j][e] * r;
      s_x[planar ? x_planar_at(k, K) : k] = round_to_dtype(DT, v);
    }
}

#endif  // AMK_ATTN_MMA_PATH

#ifdef AMK_ATTN_MMA_PATH
/// The 16 bytes a prologue item of attention_row_stage reads, loaded before the cos / sin table's
/// barrier so that their round trip overlaps the table's. Items [0, nq) are 8 elements of a q row
/// and their partners half a head on (row it / 4, elements 8 (it % 4) + [0, 8) and + 32), [nq,
/// nq + nk) the same of a fresh k row, the rest 8 elements of a fresh v row (hi unused). head_dim
/// 64 (attention_row_plan admits no other), 16-bit q / k_new / v_new with 16-byte aligned rows.
struct RowPrologueItem {
  uint4 lo, hi;
};

AMK_DEVICE RowPrologueItem attention_row_prologue_load(const AttentionRowPlan& rp, int32_t it, int32_t nq, int32_t nk) {
  constexpr int32_t HD = 64, half = HD / 2, kGroups = half / 8;
  RowPrologueItem r{};
  if (it < nq + nk) {
    const bool is_k = it >= nq;
    const int32_t j = is_k ? it - nq : it;
    const auto* src = static_cast<const uint16_t*>(is_k ? rp.k_new : rp.q) + (j / kGroups) * HD + (j % kGroups) * 8;
    r.lo = *reinterpret_cast<const uint4*>(src);
    r.hi = *reinterpret_cast<const uint4*>(src + half);
  } else {
    const int32_t j = it - nq - nk;
    r.lo = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(rp.v_new) + j * 8);
  }
  return r;
}

/// Item `it` (loaded as `in`) rotated with the step's table s_cs = [cos(pos f_i)][sin(pos f_i)]
/// (rope_rotate's arithmetic) and rounded to q's dtype into s_q (q rows) or s_fresh ([n_kv][k,
/// v][hd]).
template <int DT>
AMK_DEVICE void attention_row_prologue_store(const RowPrologueItem& in, int32_t it, int32_t nq, int32_t nk,
                                             const float* s_cs, float* s_q, float* s_fresh) {
  constexpr int32_t HD = 64, half = HD / 2, kGroups = half / 8;
  float lo[8], hi[8];
  unpack16<DT>(in.lo, lo);
  if (it < nq + nk) {
    unpack16<DT>(in.hi, hi);
    const bool is_k = it >= nq;
    const int32_t j = is_k ? it - nq : it, r = j / kGroups, i0 = (j % kGroups) * 8;
    float* const dst = is_k ? s_fresh + 2 * r * HD : s_q + r * HD;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float c = s_cs[i0 + e], sn = s_cs[half + i0 + e];
      dst[i0 + e] = round_to_dtype(DT, lo[e] * c - hi[e] * sn);
      dst[i0 + half + e] = round_to_dtype(DT, hi[e] * c + lo[e] * sn);
    }
    return;
  }
  const int32_t j = it - nq - nk, g = j / (HD / 8), d0 = (j % (HD / 8)) * 8;
#pragma unroll
  for (int e = 0; e < 8; ++e) s_fresh[(2 * g + 1) * HD + d0 + e] = round_to_dtype(DT, lo[e]);
}
#endif  // AMK_ATTN_MMA_PATH

/// Stage the attention of `rp` as a streamed GEMV's x (StreamX's layout for weights of dtype
/// `wdt`) in ctx.s_work, rotating q and the fresh key first (rope_fresh_prologue's arithmetic, for
/// every head at once). INDEX_OUT_OF_RANGE when the step's position is not a cache row,
/// BAD_PARAMS where this path does not exist (no tensor cores) or the work area is too small.
/// Whole block; begins with a barrier (the previous task's reads of s_work) and ends with one.
AMK_DEVICE_NOINLINE int32_t attention_row_stage(const AttentionRowPlan& rp, int32_t wdt, const DeviceCtx& ctx) {
  compute_barrier();
#ifdef AMK_ATTN_MMA_PATH
  int32_t j_begin = 0, j_end = 0, pos = 0;
  bool fresh = false;
  AMK_TRY_DEV(attention_row_window(rp, &j_begin, &j_end, &pos, &fresh));  // uniform: every thread reads p
  if (rp.head_dim != 64 || rp.group > kRowPlanMaxGroup || rp.group < 1 || attention_row_floats(rp) > ctx.work_floats)
    return AMK_DEVERR_BAD_PARAMS;
  constexpr int32_t HD = 64;
  const int32_t K = rp.n_heads * HD, half = HD / 2;
  float* const s_x = ctx.s_work;
  float* const s_q = s_x + K;
  float* const s_fresh = s_q + K;  // [n_kv][k, v][hd]
  const float fpos = static_cast<float>(pos);
  const int32_t dt = rp.dtype;
#ifdef AMK_ATTN_ROW_SCALAR_PROLOGUE  // A/B (PERFORMANCE row 178): one element per thread a step
  const int32_t rows = rp.n_heads + (fresh ? 2 * rp.n_kv_heads : 0);
  for (int32_t e = static_cast<int32_t>(block_tid()); e < rows * HD; e += static_cast<int32_t>(block_threads())) {
    const int32_t r = e / HD, d = e - r * HD;
    if (r >= rp.n_heads) {
      const int32_t fr = r - rp.n_heads, g = fr >> 1;
      const bool is_v = (fr & 1) != 0;
      float v;
      if (is_v) {
        v = load_elem(rp.v_new, dt, g * HD + d);
      } else {
        const int32_t i = d < half ? d : d - half;
        v = rope_rotate(load_elem(rp.k_new, dt, g * HD + i), load_elem(rp.k_new, dt, g * HD + i + half), rp.inv_freq[i],
                        fpos, d >= half);
      }
      s_fresh[fr * HD + d] = round_to_dtype(dt, v);
      continue;
    }
    const int32_t i = d < half ? d : d - half;
    const float v = rope_rotate(load_elem(rp.q, dt, r * HD + i), load_elem(rp.q, dt, r * HD + i + half), rp.inv_freq[i],
                                fpos, d >= half);
    s_q[e] = round_to_dtype(dt, v);
  }
#else
  // The prologue: q rotated, the fresh k rotated and v copied, each rounded to its buffer's dtype.
  // Every head rotates by the same half-head of angles, so their cos / sin are computed once
  // (one warp, into s_x, which the walk writes only after the barrier) instead of once per
  // element (3072 precise cosf + sinf pairs on the 1B); each thread takes 8 elements of a row and
  // their partners with 16-byte loads, its first item's issued before the table's barrier.
  const int32_t nq = rp.n_heads * (half / 8), nk = fresh ? rp.n_kv_heads * (half / 8) : 0;
  const int32_t items = nq + nk + (fresh ? rp.n_kv_heads * (HD / 8) : 0);
  const auto tid = static_cast<int32_t>(block_tid()), threads = static_cast<int32_t>(block_threads());
  RowPrologueItem first{};
  if (tid < items) first = attention_row_prologue_load(rp, tid, nq, nk);
  float* const s_cs = s_x;  // [cos][sin] of the half-head's angles
  if (tid < half) {
    const float ang = fpos * rp.inv_freq[tid];
    s_cs[tid] = cosf(ang);
    s_cs[half + tid] = sinf(ang);
  }
  compute_barrier();
  for (int32_t it = tid; it < items; it += threads) {
    const RowPrologueItem in = it == tid ? first : attention_row_prologue_load(rp, it, nq, nk);
    if (dt == AMK_DTYPE_BF16) attention_row_prologue_store<AMK_DTYPE_BF16>(in, it, nq, nk, s_cs, s_q, s_fresh);
    else attention_row_prologue_store<AMK_DTYPE_F16>(in, it, nq, nk, s_cs, s_q, s_fresh);
  }
#endif  // AMK_ATTN_ROW_SCALAR_PROLOGUE
  compute_barrier();
  AMK_PROBE(9, ctx);  // the prologue is done (PERFORMANCE row 178)
#ifdef AMK_EMU_ATTN_ROW_ONE_BLOCK  // measurement only (row 178): the walk's first 16 keys alone
  const int32_t end = j_begin + 16 < j_end + (fresh ? 1 : 0) ? j_begin + 16 : j_end + (fresh ? 1 : 0);
#else
  const int32_t end = j_end + (fresh ? 1 : 0);
#endif  // AMK_EMU_ATTN_ROW_ONE_BLOCK
  const bool planar = stream_x_planar(wdt);
  const auto walk = [&] {  // every KV head's query heads over the window, a warp per KV head
    for (int32_t g = gpu::warp_id(); g < rp.n_kv_heads; g += compute_warps()) {
      if (dt == AMK_DTYPE_BF16) attention_row_kv_head<AMK_DTYPE_BF16>(rp, g, j_begin, j_end, end, s_q, s_fresh, s_x, planar);
      else attention_row_kv_head<AMK_DTYPE_F16>(rp, g, j_begin, j_end, end, s_q, s_fresh, s_x, planar);
    }
  };
#ifdef AMK_ATTN_ROW_TWICE  // measurement only (row 178): the walk once before the walk, so the second runs on warm code
  walk();
  AMK_PROBE(11, ctx);  // warp 0's first walk is done
#endif  // AMK_ATTN_ROW_TWICE
  walk();
  AMK_PROBE(10, ctx);  // warp 0's walk (KV head 0) is done
  compute_barrier();  // s_x is whole
  return AMK_DEVERR_NONE;
#else
  (void)rp;
  (void)wdt;
  (void)ctx;
  return AMK_DEVERR_BAD_PARAMS;
#endif  // AMK_ATTN_MMA_PATH
}

}  // namespace amk::instructions
