// tests/instructions/step_gemv_test.cpp: the step-position GEMVs (FUSED RMSNORM_GEMV_ROPE, _APPEND,
// _ROPE_APPEND; docs/ROPE_IN_GEMV.md) against the unfused chain computed here in fp64: rmsnorm,
// x @ W.T with W in the model's row order, rotate-half at the step's position, then the output
// permuted into rope-pair order (element i of a head at 2i, element i + hd/2 at 2i + 1), which is
// where the fused task must leave it. The weights the task gets are permuted by this file too.
#include <catch2/catch.hpp>

#include <cmath>

#include "instructions/fused.h"
#include "ir/opspec.h"
#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {

static_assert(amk::instructions::kRecipeRmsNormGemvRope == static_cast<int32_t>(amk::ir::FusedRecipe::RmsNormGemvRope));
static_assert(amk::instructions::kRecipeRmsNormGemvAppend ==
              static_cast<int32_t>(amk::ir::FusedRecipe::RmsNormGemvAppend));
static_assert(amk::instructions::kRecipeRmsNormGemvRopeAppend ==
              static_cast<int32_t>(amk::ir::FusedRecipe::RmsNormGemvRopeAppend));

// Row r of the permuted matrix is row pair_source(r) of the model's: per head of hd rows, stored
// row 2i holds row i and 2i + 1 holds row i + hd/2.
int64_t pair_source(int64_t r, int64_t hd) {
  const int64_t head = r / hd, m = r % hd;
  return head * hd + (m % 2 == 0 ? m / 2 : m / 2 + hd / 2);
}

std::vector<double> permute_rows(const std::vector<double>& w, int64_t N, int64_t K, int64_t hd) {
  std::vector<double> out(w.size());
  for (int64_t r = 0; r < N; ++r)
    for (int64_t k = 0; k < K; ++k) out[r * K + k] = w[pair_source(r, hd) * K + k];
  return out;
}

struct Case {
  int32_t recipe;
  int64_t hd, heads, K, n_off, n_tile;
  int32_t pos, step;  // params.pos, step.pos
};

// The fused task's expected output row (rope-pair order; NaN outside the tile) and magnitudes.
void expect_row(const Case& c, const std::vector<double>& x, const std::vector<double>& nw,
                const std::vector<double>& w, const std::vector<double>& inv, std::vector<double>* want,
                std::vector<double>* mag) {
  const int64_t N = c.heads * c.hd, K = c.K;
  double ss = 0;
  for (int64_t k = 0; k < K; ++k) ss += x[k] * x[k];
  const double rinv = 1.0 / std::sqrt(ss / K + static_cast<double>(1e-5f));
  std::vector<double> y(N), m(N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      y[n] += x[k] * rinv * nw[k] * w[n * K + k];
      m[n] += std::fabs(x[k] * rinv * nw[k] * w[n * K + k]);
    }
  std::vector<double> rot = y, rmag = m;
  if (c.recipe != 11) {
    const int64_t half = c.hd / 2;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = h * c.hd + i, b = a + half;
        const double ang = static_cast<float>(c.pos + c.step) * static_cast<float>(inv[i]);
        rot[a] = y[a] * std::cos(ang) - y[b] * std::sin(ang);
        rot[b] = y[b] * std::cos(ang) + y[a] * std::sin(ang);
        rmag[a] = rmag[b] = m[a] + m[b];
      }
  }
  want->assign(N, NAN);
  mag->assign(N, 0);
  for (int64_t r = c.n_off; r < c.n_off + c.n_tile; ++r) {
    const int64_t src = c.recipe == 11 ? r : pair_source(r, c.hd);  // v keeps the model's order
    (*want)[r] = rot[src];
    (*mag)[r] = rmag[src];
  }
}

}  // namespace

TEST_CASE("step-position GEMVs: rmsnorm, x @ W.T, rotate-half at the step, in rope-pair order",
          "[instructions][op:fused][rope]") {
  const Case cases[] = {
      {10, 8, 3, 40, 0, 24, 0, 5},   // q: every head, pos from the step alone
      {10, 16, 2, 33, 6, 18, 2, 9},  // a tile starting and ending inside heads
      {12, 8, 2, 40, 4, 8, 1, 3},    // k into cache row 4
      {11, 8, 2, 40, 2, 10, 0, 6},   // v into cache row 6, no rotation
  };
  for (const Case& c : cases) {
    INFO("recipe " << c.recipe << " hd " << c.hd << " tile [" << c.n_off << ", " << c.n_off + c.n_tile << ")");
    const int64_t N = c.heads * c.hd, K = c.K, S = 12;
    const auto xv = random_values(K, 71, AMK_DTYPE_BF16, -2, 2), nv = random_values(K, 72, AMK_DTYPE_BF16, 0.5, 1.5);
    const auto wv = random_values(N * K, 73, AMK_DTYPE_BF16);
    std::vector<double> inv(c.hd / 2);
    for (int64_t i = 0; i < c.hd / 2; ++i) inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / c.hd));
    RefProgram p;
    const int32_t x = p.add(AMK_DTYPE_BF16, {K}, xv), nw = p.add(AMK_DTYPE_BF16, {K}, nv);
    const int32_t w = p.add(AMK_DTYPE_BF16, {N, K}, c.recipe == 11 ? wv : permute_rows(wv, N, K, c.hd));
    const int32_t f = p.add(AMK_DTYPE_F32, {c.hd / 2}, inv);
    const bool append = c.recipe != 10;
    const int32_t y = append ? p.add(AMK_DTYPE_BF16, {S, N}) : p.add(AMK_DTYPE_BF16, {N});
    p.poison(y);
    std::vector<int32_t> ins{x, nw, w};
    if (c.recipe != 11) ins.push_back(f);
    auto inst = make_inst(AMK_OP_FUSED, ins, {y});
    inst.params.flags = AMK_FLAG_STEP_POS | (c.recipe << AMK_FLAG_RECIPE_SHIFT);
    inst.params.K = static_cast<int32_t>(K);
    inst.params.n_off = static_cast<int32_t>(c.n_off);
    inst.params.N_tile = static_cast<int32_t>(c.n_tile);
    inst.params.head_dim = static_cast<int32_t>(c.hd);
    inst.params.pos = c.pos;
    inst.params.eps = 1e-5f;
    p.set_step(c.step);
    REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    std::vector<double> want, mag;
    expect_row(c, xv, nv, wv, inv, &want, &mag);
    const int64_t row = append ? c.pos + c.step : 0;  // the cache row written
    std::vector<double> got, exp, tol;
    for (int64_t r = 0; r < (append ? S : 1); ++r)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t i = r * N + n;
        if (r != row || std::isnan(want[n])) {
          CHECK(p.bits16(y, i) == 0xa5a5);  // outside the tile and the row: untouched
          continue;
        }
        got.push_back(p.get(y, i));
        exp.push_back(want[n]);
        tol.push_back(tolerance(AMK_DTYPE_BF16, want[n], mag[n]));
      }
    CHECK(count_mismatches("tile", got, exp, tol) == 0);
    CHECK(p.guards_intact());
  }
}

TEST_CASE("step-position GEMVs refuse what they cannot do", "[instructions][op:fused][rope]") {
  const int64_t hd = 8, N = 16, K = 16, S = 4;
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_BF16, {K}), nw = p.add(AMK_DTYPE_BF16, {K}), w = p.add(AMK_DTYPE_BF16, {N, K});
  const int32_t f = p.add(AMK_DTYPE_F32, {hd / 2}), f16 = p.add(AMK_DTYPE_BF16, {hd / 2});
  const int32_t y = p.add(AMK_DTYPE_BF16, {N}), cache = p.add(AMK_DTYPE_BF16, {S, N});
  const auto make = [&](int32_t recipe, std::vector<int32_t> ins, int32_t out) {
    auto inst = make_inst(AMK_OP_FUSED, ins, {out});
    inst.params.flags = AMK_FLAG_STEP_POS | (recipe << AMK_FLAG_RECIPE_SHIFT);
    inst.params.K = K;
    inst.params.n_off = 0;
    inst.params.N_tile = N;
    inst.params.head_dim = hd;
    inst.params.eps = 1e-5f;
    return inst;
  };
  p.set_step(1);
  CHECK(p.run(make(10, {x, nw, w, f}, y)) == AMK_DEVERR_NONE);
  auto odd = make(10, {x, nw, w, f}, y);
  odd.params.n_off = 1;  // a tile that splits a pair
  odd.params.N_tile = 14;
  CHECK(p.run(odd) == AMK_DEVERR_BAD_PARAMS);
  auto no_step = make(10, {x, nw, w, f}, y);
  no_step.params.flags = 10 << AMK_FLAG_RECIPE_SHIFT;
  CHECK(p.run(no_step) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(make(10, {x, nw, w, f16}, y)) == AMK_DEVERR_BAD_PARAMS);  // inv_freq must be F32
  auto bad_hd = make(10, {x, nw, w, f}, y);
  bad_hd.params.head_dim = 6;  // inv_freq has 4 entries, not 3
  CHECK(p.run(bad_hd) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(make(11, {x, nw, w}, y)) == AMK_DEVERR_BAD_PARAMS);  // an append's output is a cache
  CHECK(p.run(make(11, {x, nw, w}, cache)) == AMK_DEVERR_NONE);
  p.set_step(S);  // one row past the cache
  CHECK(p.run(make(12, {x, nw, w, f}, cache)) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  CHECK(p.run(make(10, {x, nw, w, f}, y)) == AMK_DEVERR_NONE);  // q has no row to run out of
  p.set_step(0);
  auto neg = make(12, {x, nw, w, f}, cache);
  neg.params.pos = -1;
  CHECK(p.run(neg) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
}
