// tests/instructions/attention_softmax_test.cpp: the device lanes' online softmax
// (instructions/attention_softmax.h) on the host: attn_add_block (a round's keys at once, the
// -DAMK_ATTN_BLOCK_SOFTMAX variant) must leave the state attn_add_key leaves key by key, up to
// rounding: the same max exactly, the same denominator and accumulators to float precision,
// masked keys (-inf) ignored, an all-masked round before any key leaving the state empty.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "instructions/attention_softmax.h"

using amk::instructions::attn_add_block;
using amk::instructions::attn_add_key;
using amk::instructions::attn_empty;
using amk::instructions::AttnState;

namespace {

constexpr int kE = 8;  // dims per lane (16 bytes of bf16)
constexpr int kU = 4;  // keys per round (attention_head_vec's kU)

/// Relative closeness of two states' denominators and accumulators; the maxima must be equal.
void check_same(const AttnState<kE>& a, const AttnState<kE>& b) {
  CHECK(a.m == b.m);
  CHECK(a.l == Approx(b.l).epsilon(1e-5));
  for (int e = 0; e < kE; ++e) {
    INFO("dim " << e);
    CHECK(a.acc[e] == Approx(b.acc[e]).epsilon(1e-5).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("online softmax: a round's keys added at once equal the same keys added one by one", "[instructions][op:attention_tile]") {
  std::mt19937 rng(2111);
  std::uniform_real_distribution<float> score(-6.0f, 6.0f), value(-1.0f, 1.0f), coin(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    INFO("trial " << trial);
    AttnState<kE> one = attn_empty<kE>(), block = attn_empty<kE>();
    const int rounds = 1 + trial % 12;
    const float masked_share = trial % 3 == 0 ? 0.0f : trial % 3 == 1 ? 0.3f : 0.9f;
    for (int r = 0; r < rounds; ++r) {
      float sc[kU], v[kU][kE];
      for (int u = 0; u < kU; ++u) {
        // Masked keys (a -inf bias, or past the window) and, every fifth round, a rising max.
        sc[u] = coin(rng) < masked_share ? -INFINITY : score(rng) + (r % 5 == 4 ? 4.0f : 0.0f);
        for (int e = 0; e < kE; ++e) v[u][e] = value(rng);
        attn_add_key(one, sc[u], v[u]);
      }
      attn_add_block(block, sc, [&](int u, float (&out)[kE]) {
        for (int e = 0; e < kE; ++e) out[e] = v[u][e];
      });
      check_same(one, block);
    }
  }
}

TEST_CASE("online softmax: an all-masked round leaves an empty state empty and a seen state unchanged",
          "[instructions][op:attention_tile]") {
  const float masked[kU] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int loads = 0;
  const auto load_v = [&](int, float (&out)[kE]) {
    ++loads;
    for (int e = 0; e < kE; ++e) out[e] = 1.0f;
  };
  AttnState<kE> s = attn_empty<kE>();
  attn_add_block(s, masked, load_v);
  CHECK(std::isinf(s.m));
  CHECK(s.m < 0.0f);
  CHECK(s.l == 0.0f);
  for (float acc : s.acc) CHECK(acc == 0.0f);
  CHECK(loads == 0);  // nothing seen: no value is read

  const float v[kE] = {1, 2, 3, 4, 5, 6, 7, 8};
  attn_add_key(s, 0.5f, v);
  const AttnState<kE> seen = s;
  attn_add_block(s, masked, load_v);
  CHECK(s.m == seen.m);
  CHECK(s.l == seen.l);
  for (int e = 0; e < kE; ++e) CHECK(s.acc[e] == seen.acc[e]);
}

TEST_CASE("online softmax: the normalised output is the softmax-weighted mean of the values",
          "[instructions][op:attention_tile]") {
  // Two rounds, one key masked: out = sum_j e^(s_j) v_j / sum_j e^(s_j) over the unmasked keys.
  const float sc1[kU] = {1.0f, -INFINITY, 0.25f, 2.0f}, sc2[kU] = {-1.0f, 3.0f, 0.0f, 0.5f};
  float v[2 * kU][kE];
  for (int j = 0; j < 2 * kU; ++j)
    for (int e = 0; e < kE; ++e) v[j][e] = static_cast<float>((j + 1) * (e % 3 - 1)) * 0.25f;
  AttnState<kE> s = attn_empty<kE>();
  attn_add_block(s, sc1, [&](int u, float (&out)[kE]) {
    for (int e = 0; e < kE; ++e) out[e] = v[u][e];
  });
  attn_add_block(s, sc2, [&](int u, float (&out)[kE]) {
    for (int e = 0; e < kE; ++e) out[e] = v[kU + u][e];
  });
  const float scores[2 * kU] = {1.0f, -INFINITY, 0.25f, 2.0f, -1.0f, 3.0f, 0.0f, 0.5f};
  for (int e = 0; e < kE; ++e) {
    double num = 0.0, den = 0.0;
    for (int j = 0; j < 2 * kU; ++j) {
      if (std::isinf(scores[j])) continue;
      const double w = std::exp(static_cast<double>(scores[j]));
      num += w * v[j][e];
      den += w;
    }
    INFO("dim " << e);
    CHECK(s.acc[e] / s.l == Approx(num / den).epsilon(1e-5).margin(1e-6));
  }
  CHECK(s.m == 3.0f);
}
