// instructions/attention_mma.cuh: ATTENTION_TILE's tensor-core path (CUDA sm_80+, 16-bit K / V of
// head_dim 64 or 128). One warp runs the query heads of one KV head (up to 8: a GQA group) over
// 16 keys at a time with mma.sync m16n8k16 and an online softmax per head, so a K / V row is read
// once for all of its query heads and the per-key arithmetic of the scalar paths (unpack, fma
// chains, shuffles per key: what binds the ctx-8192 attention, docs/PERFORMANCE.md row 101) is a
// few tensor-core instructions per 16 keys.
//
// Fragments (PTX ISA, m16n8k16 .bf16 / .f16, lane = 4 * gq + tq):
//   scores  S^T[16 heads x 8 keys] = Q[16 x hd] . K^T[hd x 8] over hd / 16 k-steps; rows 8-15 of
//           Q are zero (at most 8 heads a pass), so a lane keeps only c0, c1: head gq, keys 2tq and
//           2tq + 1 of the n-tile.
//   output  O[16 heads x 8 dims] += P[16 x 16 keys] . V[16 keys x 8 dims] per n-tile of dims; P's
//           A fragment is exactly the lane's scores of the block's two key n-tiles (FA2's reuse).
// The head dim is the contraction of the scores, so it may be permuted as long as Q and K agree:
// k-step s of lane (gq, tq) takes its 4 dims from the 16-byte chunk 4 (s / 2) + tq, elements
// 4 (s % 2) .. + 3, so each lane loads whole 16-byte chunks of K and q. Output n-tile j column gq
// is dim 8 (gq + 8 (j / 8)) + j % 8, so a lane's V operand is 16-byte chunks too (chunk gq + 8i of
// keys 2tq, 2tq + 1, 2tq + 8, 2tq + 9), paired into the B registers with one byte_perm each.
// P is split into a 16-bit high part and the rounded remainder (two mma per tile), so the output
// keeps about 16 bits of each weight where one 16-bit P would keep 8 (bf16); the denominator sums
// the fp32 weights.
#pragma once

#if !defined(AMK_ATTN_NO_MMA) && !defined(AMK_USE_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define AMK_ATTN_MMA_PATH 1
#endif

#ifdef AMK_ATTN_MMA_PATH
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "instructions/attention_common.cuh"

namespace amk::instructions {

/// Query heads of one KV head per pass (the rows 0-7 of the mma's M = 16).
inline constexpr int kMmaHeads = 8;

// head_dim 128 takes this path only under -DAMK_ATTN_MMA_HD128 (a build-ab variant): its loop
// spills (ptxas, sm_90a: 252 bytes even with V loaded after the scores), and the scalar path is
// measured at Llama-3-8B's shapes.
#ifdef AMK_ATTN_MMA_HD128
inline constexpr bool kAttnMmaHd128 = true;
#else
inline constexpr bool kAttnMmaHd128 = false;
#endif  // AMK_ATTN_MMA_HD128

/// d[0..1] += A . B for rows 0-7 of a m16n8k16 tile whose rows 8-15 of A are zero: a_lo holds
/// (row gq, k 2tq..2tq+1), a_hi (row gq, k 2tq+8..2tq+9); b_lo / b_hi likewise for B's k rows.
template <int DT>
AMK_DEVICE void mma_rows8(float (&d)[2], uint32_t a_lo, uint32_t a_hi, uint32_t b_lo, uint32_t b_hi) {
  float unused2, unused3;
  const uint32_t z = 0u;
  const float zf = 0.0f;
  if constexpr (DT == AMK_DTYPE_BF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(unused2), "=f"(unused3)
        : "r"(a_lo), "r"(z), "r"(a_hi), "r"(z), "r"(b_lo), "r"(b_hi), "f"(d[0]), "f"(d[1]), "f"(zf), "f"(zf));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(unused2), "=f"(unused3)
        : "r"(a_lo), "r"(z), "r"(a_hi), "r"(z), "r"(b_lo), "r"(b_hi), "f"(d[0]), "f"(d[1]), "f"(zf), "f"(zf));
  }
}

/// mma_rows8 with all four accumulator registers kept by the caller: rows 8-15 of D stay 0 (A's
/// rows are 0 there), so no zeros are moved into C's upper half before every mma.
template <int DT>
AMK_DEVICE void mma_rows8(float (&d)[4], uint32_t a_lo, uint32_t a_hi, uint32_t b_lo, uint32_t b_hi) {
  const uint32_t z = 0u;
  if constexpr (DT == AMK_DTYPE_BF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a_lo), "r"(z), "r"(a_hi), "r"(z), "r"(b_lo), "r"(b_hi));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a_lo), "r"(z), "r"(a_hi), "r"(z), "r"(b_lo), "r"(b_hi));
  }
}

/// 16 bytes of global memory through ld.global. The megakernel reaches K / V through pointers in
/// a plan in memory, which the compiler would otherwise load through generic addresses.
AMK_DEVICE uint4 ld_global16(const void* p) {
  uint4 v;
  asm("{\n\t.reg .u64 ga;\n\tcvta.to.global.u64 ga, %4;\n\tld.global.v4.u32 {%0, %1, %2, %3}, [ga];\n\t}"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

/// 2^x with ex2.approx.ftz (one MUFU op; exp2f adds a fix-up for results below 2^-126, which a
/// softmax weight may as well lose). exp2_ftz(-inf) = 0.
AMK_DEVICE float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// Two floats as a 16-bit pair (lo in the low half), rounded to nearest.
template <int DT>
AMK_DEVICE uint32_t pack_pair(float lo, float hi) {
  if constexpr (DT == AMK_DTYPE_BF16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

/// The pair's values back as floats.
template <int DT>
AMK_DEVICE float2 unpack_pair(uint32_t w) {
  if constexpr (DT == AMK_DTYPE_BF16) return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  else return __half22float2(*reinterpret_cast<const __half2*>(&w));
}

/// (lo, hi) as the 16-bit pair `big` plus the pair of their remainders `small`.
template <int DT>
AMK_DEVICE void split_pair(float lo, float hi, uint32_t& big, uint32_t& small) {
  big = pack_pair<DT>(lo, hi);
  const float2 b = unpack_pair<DT>(big);
  small = pack_pair<DT>(lo - b.x, hi - b.y);
}

/// One block's softmax weights for the online softmax of a lane's 4 scores s[n][e] (log2 units,
/// masked keys -inf) against the running max m and its update m_new: the pairs p_big / p_small
/// (split_pair) for the P.V mma, l advanced by alpha and the weights; returns alpha. A block of
/// keys all masked so far (m_new -inf) subtracts 0, so that alpha and the weights are exp2(-inf)
/// = 0 without a branch (acc and l are 0 then); ex2.approx.ftz drops exp2f's fix-up for results
/// below 2^-126 (4 instructions and a branch a weight; PERFORMANCE row 180).
template <int DT, int N>
AMK_DEVICE float online_block_weights(const float (&s)[2][N], float m, float m_new, float& l, uint32_t (&p_big)[2],
                                      uint32_t (&p_small)[2]) {
  const float m_sub = m_new == -__int_as_float(0x7f800000) ? 0.0f : m_new;
  const float alpha = exp2_ftz(m - m_sub);
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    const float p0 = exp2_ftz(s[n][0] - m_sub), p1 = exp2_ftz(s[n][1] - m_sub);
    l = fmaf(l, n == 0 ? alpha : 1.0f, p0 + p1);
    split_pair<DT>(p0, p1, p_big[n], p_small[n]);
  }
  return alpha;
}

/// 16 bytes of a cache row from floats (the fresh key's row in shared memory; its values are
/// already rounded to the cache's dtype, so the packing is exact).
template <int DT>
AMK_DEVICE uint4 pack16(const float* f) {
  return make_uint4(pack_pair<DT>(f[0], f[1]), pack_pair<DT>(f[2], f[3]), pack_pair<DT>(f[4], f[5]),
                    pack_pair<DT>(f[6], f[7]));
}

/// Word w (0-3) of a 16-byte vector.
AMK_DEVICE uint32_t word(const uint4& v, int w) { return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w; }

/// The query heads [h0, h0 + nh) of one KV head (nh <= kMmaHeads), merged and stored by
/// attention_merge_store_heads (head by head when the work area is too small). ROPE_ATTENTION's
/// q rows come rotated from rope_fresh_prologue (all nh in one round trip), else from a.q.
/// Preconditions (AttentionTileArgs::mma_layout): K, V and q of dtype DT, K / V contiguous with 16-byte
/// aligned rows. Whole block.
template <int DT, int HD>
AMK_DEVICE_NOINLINE void attention_heads_mma(const AttentionTileArgs& a, int64_t h0, int nh, const DeviceCtx& ctx) {
  // A row is HD / 8 chunks of 16 bytes: K's (and q's) are dealt over a quad's 4 lanes, V's over
  // the 8 quads.
  constexpr int kChunksK = HD / (8 * 4);  // a lane's 16-byte chunks of a key row (and of a q row)
  constexpr int kChunksV = HD / (8 * 8);  // a lane's 16-byte chunks of a value row
  constexpr int kSteps = HD / 16;    // k-steps of the scores
  constexpr int kTiles = HD / 8;     // n-tiles of the output
  // head_dim 128: V's loads wait for the scores (K, V, q and acc at once would spill 364 bytes
  // inside the loop; ptxas, sm_90a), a round trip more per 16 keys.
  constexpr bool kLateV = HD > 64;
  // -DAMK_ATTN_MMA_BLOCKS=n (head_dim 64): n blocks of 16 keys a load round per warp, so n times
  // the bytes in flight and 1 / n the round trips of a task (a build-ab variant: at n = 2 the
  // persistent kernel's own code spilled and every stage slowed by ~8%; row 104).
#ifdef AMK_ATTN_MMA_BLOCKS
  constexpr int kBlocks = kLateV ? 1 : AMK_ATTN_MMA_BLOCKS;
#else
  constexpr int kBlocks = 1;
#endif  // AMK_ATTN_MMA_BLOCKS
  constexpr int64_t kEsize = 2;
  static_assert((kMmaHeads - 1) * HD <= kComputeWarps * (HD + 2), "the q rows must end before the fresh rows");
  const float neg_inf = -__int_as_float(0x7f800000);
  const int lane = gpu::lane_id(), warp = gpu::warp_id(), nw = compute_warps();
  const int gq = lane >> 2, tq = lane & 3;
  const int64_t g = h0 / a.group, row_bytes = a.n_kv_heads * HD * kEsize;
  const char* kbase = static_cast<const char*>(a.k.ptr) + g * HD * kEsize;
  const char* vbase = static_cast<const char*>(a.v.ptr) + g * HD * kEsize;
  const bool q_in_smem = a.rope_fresh;
  AMK_PROBE(3, ctx);
  compute_barrier();  // the previous pass's merge has read s_part, which the q rows overlap
  if (q_in_smem) rope_fresh_prologue(a, h0, nh, ctx);  // ends with a barrier
  AMK_PROBE(4, ctx);

  // q: lane (gq, tq) holds head h0 + gq's chunks tq + 4i, which are its A words of every k-step.
  uint4 qc[kChunksK];
#pragma unroll
  for (int i = 0; i < kChunksK; ++i) {
    const int64_t d0 = 8 * (tq + 4 * i);
    if (gq >= nh) {
      qc[i] = make_uint4(0u, 0u, 0u, 0u);
    } else if (q_in_smem) {
      qc[i] = pack16<DT>(ctx.s_work + gq * HD + d0);
    } else if (a.q.contiguous) {
      qc[i] = *reinterpret_cast<const uint4*>(static_cast<const char*>(a.q.ptr) + ((h0 + gq) * HD + d0) * kEsize);
    } else {
      float f[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = a.q.load((h0 + gq) * HD + d0 + e);
      qc[i] = pack16<DT>(f);
    }
  }

  // The fresh key of ROPE_ATTENTION is key j_end, read from the prologue's rows.
  const int64_t end = a.j_end + (a.fresh_key ? 1 : 0);
  const float* s_fresh = fresh_rows(a, ctx);
  const auto row16 = [&](const char* base, const float* fresh, int64_t j, int chunk) {
    if (j < a.j_end) return *reinterpret_cast<const uint4*>(base + j * row_bytes + chunk * 16);
    if (j < end) return pack16<DT>(fresh + chunk * 8);
    return make_uint4(0u, 0u, 0u, 0u);
  };
  const float scale2 = a.scale * 1.4426950408889634f;  // scores in log2 units: exp2f per weight
  float m = neg_inf, l = 0.0f;  // head gq's running max (log2 units) and this lane's share of l
  // -DAMK_ATTN_MMA_QUADS: whole accumulator quads, as attention_row.cuh's step has them; here they
  // moved the default kernel's allocation (ptxas: 136 -> 448 B of spill stores; PERFORMANCE row
  // 181), so the pairs stay.
#ifdef AMK_ATTN_MMA_QUADS
  constexpr int kAcc = 4;
#else
  constexpr int kAcc = 2;
#endif  // AMK_ATTN_MMA_QUADS
  float acc[kTiles][kAcc] = {};

  struct Block {  // one warp's 16 keys: K for the two key n-tiles, V of keys 2tq, 2tq + 1, 2tq + 8, 2tq + 9
    uint4 k[2][kChunksK], v[4][kChunksV];
  };
  const auto load_k = [&](int64_t jb, Block& b) {
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int i = 0; i < kChunksK; ++i) b.k[n][i] = row16(kbase, s_fresh, jb + 8 * n + gq, tq + 4 * i);
  };
  const auto load_v = [&](int64_t jb, Block& b) {
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int i = 0; i < kChunksV; ++i)
        b.v[r][i] = row16(vbase, s_fresh + HD, jb + 2 * tq + (r & 1) + 8 * (r >> 1), gq + 8 * i);
  };
  // The block's keys into (m, l, acc); with kLateV, V's loads are issued once K's registers are free.
  const auto add_block = [&](int64_t jb, Block& b) {
    float s[2][kAcc] = {};  // [key n-tile][key 2tq + e]
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        const int i = st >> 1, w = (st & 1) * 2;
        mma_rows8<DT>(s[n], word(qc[i], w), word(qc[i], w + 1), word(b.k[n][i], w), word(b.k[n][i], w + 1));
      }
    if constexpr (kLateV) load_v(jb, b);
    float mx = neg_inf;
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t j = jb + 8 * n + 2 * tq + e;
        float x = s[n][e] * scale2;
        if (a.has_bias && j < a.j_end) x += a.bias.load(j) * 1.4426950408889634f;
        s[n][e] = j < end ? x : neg_inf;
        mx = fmaxf(mx, s[n][e]);
      }
    mx = fmaxf(mx, gpu::shfl_xor(mx, 1));  // the head's row is spread over the quad
    mx = fmaxf(mx, gpu::shfl_xor(mx, 2));
    const float m_new = fmaxf(m, mx);
#ifdef AMK_ATTN_MMA_EXP2F_STEP  // A/B (PERFORMANCE row 181): exp2f and a branch for an empty state
    const bool none = m_new == neg_inf;  // every key so far masked: keep the empty state
    const float alpha = none ? 1.0f : exp2f(m - m_new);
    uint32_t p_big[2], p_small[2];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const float p0 = none ? 0.0f : exp2f(s[n][0] - m_new), p1 = none ? 0.0f : exp2f(s[n][1] - m_new);
      l = fmaf(l, n == 0 ? alpha : 1.0f, p0 + p1);
      split_pair<DT>(p0, p1, p_big[n], p_small[n]);
    }
#else
    uint32_t p_big[2], p_small[2];
    const float alpha = online_block_weights<DT>(s, m, m_new, l, p_big, p_small);
#endif  // AMK_ATTN_MMA_EXP2F_STEP
    m = m_new;
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const int i = j >> 3, w = (j & 7) >> 1;
      const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;  // the high or the low halves of both words
      const uint32_t b_lo = __byte_perm(word(b.v[0][i], w), word(b.v[1][i], w), sel);
      const uint32_t b_hi = __byte_perm(word(b.v[2][i], w), word(b.v[3][i], w), sel);
      acc[j][0] *= alpha;
      acc[j][1] *= alpha;
      mma_rows8<DT>(acc[j], p_big[0], p_big[1], b_lo, b_hi);
      mma_rows8<DT>(acc[j], p_small[0], p_small[1], b_lo, b_hi);
    }
  };
  // kBlocks consecutive blocks a round per warp, all their loads issued before the first is added.
  const int64_t stride = 16 * static_cast<int64_t>(kBlocks) * nw;
  for (int64_t jb = a.j_begin + 16 * static_cast<int64_t>(kBlocks) * warp; jb < end; jb += stride) {
    Block b[kBlocks];
#pragma unroll
    for (int u = 0; u < kBlocks; ++u) {
      load_k(jb + 16 * u, b[u]);
      if constexpr (!kLateV) load_v(jb + 16 * u, b[u]);
    }
#pragma unroll
    for (int u = 0; u < kBlocks; ++u)
      if (jb + 16 * u < end) add_block(jb + 16 * u, b[u]);  // warp-uniform
  }
  l += gpu::shfl_xor(l, 1);
  l += gpu::shfl_xor(l, 2);
  AMK_PROBE(5, ctx);  // warp 0's loop

  // The per-warp states [acc, m, l] of the heads into shared memory, then the warps' merge: all
  // heads at once when [nh][nw][hd + 2] fits the work area (one barrier for the task instead of
  // two per head), else head by head through s_part.
  const float m_nat = m * 0.6931471805599453f;  // the merge and ATTENTION_COMBINE use e^x
  const auto write_state = [&](float* dst) {
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const int base = 64 * (j >> 3) + (j & 7);
      dst[base + 8 * (2 * tq)] = acc[j][0];
      dst[base + 8 * (2 * tq + 1)] = acc[j][1];
    }
    if (tq == 0) {
      dst[HD] = m_nat;
      dst[HD + 1] = l;
    }
  };
  // The q rows past the first (and the fresh rows, read by every warp) overlap the states of a
  // second head on: wait for every warp's loop before writing those.
  const bool overlap = q_in_smem && nh > 1;
  float* const s_parts = ctx.s_work + HD;
  if (HD + static_cast<int64_t>(nh) * nw * (HD + 2) <= ctx.work_floats) {
    if (overlap) compute_barrier();
    if (gq < nh) write_state(s_parts + (static_cast<int64_t>(gq) * nw + warp) * (HD + 2));
    attention_merge_store_heads(a, h0, nh, s_parts);
    AMK_PROBE(6, ctx);
    return;
  }
  for (int hh = 0; hh < nh; ++hh) {
    if (hh > 0 || overlap) compute_barrier();  // and after head 0, its merge has read s_part
    if (gq == hh) write_state(s_parts + static_cast<int64_t>(warp) * (HD + 2));
    attention_merge_store(a, h0 + hh, ctx);
  }
}

}  // namespace amk::instructions

#endif  // AMK_ATTN_MMA_PATH
