// instructions/attention_tile_ref.cpp: CPU reference of ATTENTION_TILE. Two passes per head over
// the window: the scores and their max, then exp(s - m) weights; subtracting the max keeps every
// exponent <= 0, so nothing overflows whatever the score scale. FUSED ROPE_ATTENTION rotates q,
// then scores the cache rows and last the fresh key built from k_new / v_new.
#include <cmath>
#include <limits>
#include <vector>

#include "instructions/attention_tile.h"
#include "instructions/common/matmul_ref.h"

namespace amk::instructions {

int32_t attention_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  AttentionTileArgs a;
  AMK_TRY_DEV(decode_attention_tile(prog, inst, &a));
  const int64_t hd = a.head_dim, kv_row = a.n_kv_heads * hd, len = a.j_end - a.j_begin;
  std::vector<float> qf(static_cast<size_t>(hd)), kf(static_cast<size_t>(hd)), acc(static_cast<size_t>(hd));
  std::vector<float> fresh_k(static_cast<size_t>(hd)), fresh_v(static_cast<size_t>(hd));
  std::vector<float> s(static_cast<size_t>(len + 1));  // the cache rows, then the fresh key
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const float pos = static_cast<float>(a.fresh_pos);
  for (int64_t h = a.h_begin; h < a.h_end; ++h) {
    const int64_t g = h / a.group;
    if (a.rope_fresh) {
      for (int64_t d = 0; d < hd; ++d)
        qf[static_cast<size_t>(d)] = round_to_dtype(a.q.dtype, rope_element(a.q, h * hd, d, hd, a.inv_freq, pos));
    } else {
      stage_row_f32(a.q, h, hd, qf.data());
    }
    float m = neg_inf;
    if (a.fresh_key) {
      for (int64_t d = 0; d < hd; ++d) {
        fresh_k[static_cast<size_t>(d)] = round_to_dtype(a.k.dtype, rope_element(a.k_new, g * hd, d, hd, a.inv_freq, pos));
        fresh_v[static_cast<size_t>(d)] = round_to_dtype(a.v.dtype, a.v_new.load(g * hd + d));
      }
      const float sj = a.scale * dot_row_contiguous(qf.data(), fresh_k.data(), AMK_DTYPE_F32, hd);
      s[static_cast<size_t>(len)] = sj;
      m = sj;
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t base = (a.j_begin + j) * kv_row + g * hd;
      stage_row_f32(a.k, base / hd, hd, kf.data());  // base is a multiple of hd
      float sj = a.scale * dot_row_contiguous(qf.data(), kf.data(), AMK_DTYPE_F32, hd);
      if (a.has_bias) sj += a.bias.load(a.j_begin + j);
      s[static_cast<size_t>(j)] = sj;
      if (sj > m) m = sj;
    }
    float l = 0.0f;
    for (auto& v : acc) v = 0.0f;
    if (m != neg_inf) {  // -inf max: empty window or every key masked; keep l = 0, acc = 0
      for (int64_t j = 0; j < len; ++j) {
        const float pj = std::exp(s[static_cast<size_t>(j)] - m);
        l += pj;
        const int64_t base = (a.j_begin + j) * kv_row + g * hd;
        for (int64_t d = 0; d < hd; ++d) acc[static_cast<size_t>(d)] += pj * a.v.load(base + d);
      }
      if (a.fresh_key) {
        const float pj = std::exp(s[static_cast<size_t>(len)] - m);
        l += pj;
        for (int64_t d = 0; d < hd; ++d) acc[static_cast<size_t>(d)] += pj * fresh_v[static_cast<size_t>(d)];
      }
    }
    const int64_t o = h * a.out_width;
    if (a.partial) {
      for (int64_t d = 0; d < hd; ++d) a.out.store(o + d, acc[static_cast<size_t>(d)]);
      a.out.store(o + hd, m);
      a.out.store(o + hd + 1, l);
    } else {
      for (int64_t d = 0; d < hd; ++d) a.out.store(o + d, l > 0.0f ? acc[static_cast<size_t>(d)] / l : 0.0f);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
