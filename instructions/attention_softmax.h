// instructions/attention_softmax.h: the online softmax of the attention paths on the device (one
// lane's running max m, denominator l and E accumulated output dims), as host + device code so the
// CPU tests can check the block update against the per-key one. The CPU reference
// (attention_tile_ref.cpp) computes in its own order; these are what the GPU's lanes run.
#pragma once
#include <math.h>

#include "instructions/common/hd.h"

// #pragma unroll for the device passes only: a host compiler warns on the unknown pragma.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define AMK_ATTN_UNROLL _Pragma("unroll")
#else
#define AMK_ATTN_UNROLL
#endif  // device pass

namespace amk::instructions {

/// Online-softmax state of one lane: running max, denominator and E accumulated output dims.
template <int E>
struct AttnState {
  float m, l, acc[E];
};

/// The state before any key: m = -inf, l = 0, acc = 0.
template <int E>
AMK_HD AttnState<E> attn_empty() {
  AttnState<E> s;
  s.m = -INFINITY;
  s.l = 0.0f;
  AMK_ATTN_UNROLL
  for (int e = 0; e < E; ++e) s.acc[e] = 0.0f;
  return s;
}

// Measurement variants of the key loop's arithmetic, for tools/profiling/build-ab.sh (compile-time,
// so the default build's code is untouched: runtime knobs in this loop moved the unchanged path
// by 5-7% at ctx 8192, docs/PERFORMANCE.md row 101). At ctx 8192 the loop is bound by its
// arithmetic, not its loads (row 100). -DAMK_ATTN_EXP2: the key's exponentials as exp2f of a
// log2e-scaled argument (one MUFU.EX2 each instead of expf's accurate sequence).
// -DAMK_ATTN_BLOCK_SOFTMAX: a round's kU keys added at once (attention_head_vec, attn_add_block).

/// e^x for the per-key softmax.
AMK_HD float attn_exp(float x) {
#ifdef AMK_ATTN_EXP2
  return exp2f(x * 1.4426950408889634f);
#else
  return expf(x);
#endif  // AMK_ATTN_EXP2
}

/// Add one key with score `sj` and value dims `v` (a masked key, sj = -inf, before any other
/// changes nothing).
template <int E>
AMK_HD void attn_add_key(AttnState<E>& s, float sj, const float (&v)[E]) {
  const float m_new = fmaxf(s.m, sj);
  if (m_new == -INFINITY) return;  // masked key, nothing seen yet
  const float alpha = attn_exp(s.m - m_new);  // 0 when m is -inf
  const float pj = attn_exp(sj - m_new);
  s.l = s.l * alpha + pj;
  AMK_ATTN_UNROLL
  for (int e = 0; e < E; ++e) s.acc[e] = fmaf(pj, v[e], s.acc[e] * alpha);
  s.m = m_new;
}

/// Add U keys at once: scores `sc` (-inf for a masked key or one past the window) and, from
/// `load_v(u, v)`, key u's value dims. One max, one rescale and U independent exponentials, where
/// U attn_add_key calls chain max -> 2 exp -> rescale per key. The same state up to rounding.
template <int E, int U, typename LoadV>
AMK_HD void attn_add_block(AttnState<E>& s, const float (&sc)[U], LoadV&& load_v) {
  float mb = s.m;
  AMK_ATTN_UNROLL
  for (int u = 0; u < U; ++u) mb = fmaxf(mb, sc[u]);
  if (mb == -INFINITY) return;  // nothing seen yet: every key masked
  const float alpha = attn_exp(s.m - mb);  // 0 when m is -inf
  float pu[U], lsum = 0.0f;
  AMK_ATTN_UNROLL
  for (int u = 0; u < U; ++u) {
    pu[u] = attn_exp(sc[u] - mb);  // 0 for a masked key
    lsum += pu[u];
  }
  s.l = fmaf(s.l, alpha, lsum);
  AMK_ATTN_UNROLL
  for (int e = 0; e < E; ++e) s.acc[e] *= alpha;
  AMK_ATTN_UNROLL
  for (int u = 0; u < U; ++u) {
    float v[E];
    load_v(u, v);
    AMK_ATTN_UNROLL
    for (int e = 0; e < E; ++e) s.acc[e] = fmaf(pu[u], v[e], s.acc[e]);
  }
  s.m = mb;
}

/// Merge `o` into `s` (either may be empty: m = -inf, l = 0, acc = 0).
template <int E>
AMK_HD void attn_merge(AttnState<E>& s, const AttnState<E>& o) {
  const float mm = fmaxf(s.m, o.m);
  if (mm == -INFINITY) return;  // both empty
  const float a1 = expf(s.m - mm), a2 = expf(o.m - mm);  // 0 for an empty side
  s.l = s.l * a1 + o.l * a2;
  AMK_ATTN_UNROLL
  for (int e = 0; e < E; ++e) s.acc[e] = s.acc[e] * a1 + o.acc[e] * a2;
  s.m = mm;
}

}  // namespace amk::instructions
