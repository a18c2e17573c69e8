// tests/instructions/gemv_test.cpp: GEMV_TILE, GEMM_TILE and the FUSED recipes against fp64 dot
// products written here: K not a multiple of the vector width, every weight dtype, padded
// (strided) weights, tiles that must leave the rest of y untouched, in-place residuals.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "instructions/fused.h"
#include "ir/opspec.h"
#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {

struct Expect {
  std::vector<double> want, mag;
};

// y[r, n] = x[r] . W[n] (+ add[r * N + n]) over the tile; elements outside keep NaN (= poisoned).
Expect matmul_expect(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>* add,
                     int64_t rows, int64_t N, int64_t K, int64_t n0, int64_t n1, int64_t m0, int64_t m1) {
  Expect e{std::vector<double>(rows * N, NAN), std::vector<double>(rows * N, 0)};
  for (int64_t r = m0; r < m1; ++r)
    for (int64_t n = n0; n < n1; ++n) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += x[r * K + k] * w[n * K + k];
        mag += std::fabs(x[r * K + k] * w[n * K + k]);
      }
      if (add) {
        s += (*add)[r * N + n];
        mag += std::fabs((*add)[r * N + n]);
      }
      e.want[r * N + n] = s;
      e.mag[r * N + n] = mag;
    }
  return e;
}

// Check the elements inside the tile (want is NaN outside it) and the guard bytes.
void check_tile(const RefProgram& p, int32_t y, int32_t dt, const Expect& e) {
  const auto got = p.values(y);
  std::vector<double> want, g, tol;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(e.want[i])) continue;
    want.push_back(e.want[i]);
    g.push_back(got[i]);
    tol.push_back(tolerance(dt, e.want[i], e.mag[i]));
  }
  CHECK(count_mismatches("tile", g, want, tol) == 0);
  CHECK(p.guards_intact());
}

// Poison decodes as these values: 0xa5a5a5a5 (f32) and 0xa5a5 (16-bit).
bool is_poison(const RefProgram& p, int32_t y, int32_t dt, int64_t i) {
  if (dt == AMK_DTYPE_F32) {
    const double v = p.get(y, i);
    float f;
    const uint32_t u = 0xa5a5a5a5u;
    std::memcpy(&f, &u, 4);
    return v == f;
  }
  return p.bits16(y, i) == 0xa5a5;
}

}  // namespace

TEST_CASE("GEMV_TILE: y = x @ W.T on the tile, every K and weight dtype", "[instructions][op:gemv_tile]") {
  for (int32_t wdt : {AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_F16}) {
    for (int64_t K : {1, 7, 33, 129, 1000}) {
      for (int32_t ydt : {AMK_DTYPE_F32, AMK_DTYPE_BF16}) {
        const int64_t N = 9, n_off = 2, n_tile = 5;
        RefProgram p;
        const auto xv = random_values(K, 11 + K, AMK_DTYPE_BF16), wv = random_values(N * K, 12 + K, wdt);
        const auto bv = random_values(N, 13, AMK_DTYPE_F32);
        const int32_t x = p.add(AMK_DTYPE_BF16, {1, K}, xv), w = p.add(wdt, {N, K}, wv);
        const int32_t b = p.add(AMK_DTYPE_F32, {N}, bv), y = p.add(ydt, {1, N});
        p.poison(y);
        auto inst = make_inst(AMK_OP_GEMV_TILE, {x, w, b}, {y});
        inst.params.K = static_cast<int32_t>(K);
        inst.params.n_off = n_off;
        inst.params.N_tile = n_tile;
        REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
        std::vector<double> badd = bv;
        const Expect e = matmul_expect(xv, wv, &badd, 1, N, K, n_off, n_off + n_tile, 0, 1);
        INFO("wdt " << wdt << " K " << K << " ydt " << ydt);
        check_tile(p, y, ydt, e);
        for (int64_t n = 0; n < N; ++n)
          if (n < n_off || n >= n_off + n_tile) CHECK(is_poison(p, y, ydt, n));
      }
    }
  }
}

TEST_CASE("GEMV_TILE: several x rows, padded weight rows, no bias", "[instructions][op:gemv_tile]") {
  const int64_t rows = 3, N = 6, K = 33;
  RefProgram p;
  const auto xv = random_values(rows * K, 21, AMK_DTYPE_F32), wv = random_values(N * K, 22, AMK_DTYPE_BF16);
  const int32_t x = p.add(AMK_DTYPE_F32, {rows, K}, xv);
  const int32_t w = p.add_strided(AMK_DTYPE_BF16, {N, K}, {K + 5, 1}, wv);  // the generic (strided) path
  const int32_t y = p.add(AMK_DTYPE_F32, {rows, N});
  auto inst = make_inst(AMK_OP_GEMV_TILE, {x, w}, {y});
  inst.params.K = K;
  inst.params.N_tile = N;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  check_tile(p, y, AMK_DTYPE_F32, matmul_expect(xv, wv, nullptr, rows, N, K, 0, N, 0, rows));
  // column-major W (stride 1 across n): no contiguous run at all
  RefProgram q;
  const int32_t xq = q.add(AMK_DTYPE_F32, {rows, K}, xv);
  const int32_t wq = q.add_strided(AMK_DTYPE_BF16, {N, K}, {1, N}, wv), yq = q.add(AMK_DTYPE_F32, {rows, N});
  REQUIRE(q.run(make_inst(AMK_OP_GEMV_TILE, {xq, wq}, {yq})) == AMK_DEVERR_BAD_PARAMS);  // K = 0
  inst = make_inst(AMK_OP_GEMV_TILE, {xq, wq}, {yq});
  inst.params.K = K;
  inst.params.n_off = 1;
  inst.params.N_tile = N - 1;
  q.poison(yq);
  REQUIRE(q.run(inst) == AMK_DEVERR_NONE);
  check_tile(q, yq, AMK_DTYPE_F32, matmul_expect(xv, wv, nullptr, rows, N, K, 1, N, 0, rows));
}

TEST_CASE("GEMV_TILE: a 4096-wide bf16 row stays within tolerance", "[instructions][op:gemv_tile]") {
  const int64_t N = 4, K = 4096;
  RefProgram p;
  const auto xv = random_values(K, 31, AMK_DTYPE_BF16), wv = random_values(N * K, 32, AMK_DTYPE_BF16);
  const int32_t x = p.add(AMK_DTYPE_BF16, {K}, xv), w = p.add(AMK_DTYPE_BF16, {N, K}, wv), y = p.add(AMK_DTYPE_F32, {N});
  auto inst = make_inst(AMK_OP_GEMV_TILE, {x, w}, {y});
  inst.params.K = K;
  inst.params.N_tile = N;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  check_tile(p, y, AMK_DTYPE_F32, matmul_expect(xv, wv, nullptr, 1, N, K, 0, N, 0, 1));
}

TEST_CASE("GEMM_TILE writes only its row and column tile", "[instructions][op:gemm_tile]") {
  for (int64_t K : {1, 7, 129}) {
    const int64_t M = 5, N = 7;
    RefProgram p;
    const auto xv = random_values(M * K, 41, AMK_DTYPE_F16), wv = random_values(N * K, 42, AMK_DTYPE_BF16);
    const auto bv = random_values(N, 43, AMK_DTYPE_BF16);
    const int32_t x = p.add(AMK_DTYPE_F16, {M, K}, xv), w = p.add(AMK_DTYPE_BF16, {N, K}, wv);
    const int32_t b = p.add(AMK_DTYPE_BF16, {N}, bv), y = p.add(AMK_DTYPE_BF16, {M, N});
    p.poison(y);
    auto inst = make_inst(AMK_OP_GEMM_TILE, {x, w, b}, {y});
    inst.params.K = static_cast<int32_t>(K);
    inst.params.m_off = 1;
    inst.params.M_tile = 3;
    inst.params.n_off = 2;
    inst.params.N_tile = 4;
    REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    std::vector<double> badd(M * N);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N; ++n) badd[r * N + n] = bv[n];
    const Expect e = matmul_expect(xv, wv, &badd, M, N, K, 2, 6, 1, 4);
    check_tile(p, y, AMK_DTYPE_BF16, e);
    for (int64_t i = 0; i < M * N; ++i)
      if (std::isnan(e.want[i])) CHECK(is_poison(p, y, AMK_DTYPE_BF16, i));
  }
}

TEST_CASE("FUSED recipe ids agree with ir::FusedRecipe", "[instructions][op:fused]") {
  using amk::ir::FusedRecipe;
  STATIC_REQUIRE(amk::instructions::kRecipeGemvAdd == static_cast<int32_t>(FusedRecipe::GemvAdd));
  STATIC_REQUIRE(amk::instructions::kRecipeRmsNormGemv == static_cast<int32_t>(FusedRecipe::RmsNormGemv));
  STATIC_REQUIRE(amk::instructions::kRecipeSiluMulGemv == static_cast<int32_t>(FusedRecipe::SiluMulGemv));
  STATIC_REQUIRE(amk::instructions::kRecipeSiluMulGemvAdd == static_cast<int32_t>(FusedRecipe::SiluMulGemvAdd));
  for (const auto& spec : amk::ir::recipe_specs()) CHECK(static_cast<int32_t>(spec.recipe) >= 1);
}

TEST_CASE("FUSED recipes equal their unfused definitions in fp64", "[instructions][op:fused]") {
  const int64_t N = 10, n_off = 3, n_tile = 4;
  for (int64_t K : {7, 64, 129}) {
    const auto xv = random_values(K, 51, AMK_DTYPE_BF16, -2, 2), uv = random_values(K, 52, AMK_DTYPE_BF16, -2, 2);
    const auto nv = random_values(K, 53, AMK_DTYPE_BF16, 0.5, 1.5), wv = random_values(N * K, 54, AMK_DTYPE_BF16);
    const auto rv = random_values(N, 55, AMK_DTYPE_BF16);
    for (int recipe = 1; recipe <= 4; ++recipe) {
      RefProgram p;
      const int32_t x = p.add(AMK_DTYPE_BF16, {K}, xv), aux = p.add(AMK_DTYPE_BF16, {K}, recipe == 2 ? nv : uv);
      const int32_t w = p.add(AMK_DTYPE_BF16, {N, K}, wv), res = p.add(AMK_DTYPE_BF16, {N}, rv);
      // GEMV_ADD writes into its residual (in place); the others into a fresh poisoned y
      const int32_t y = recipe == 1 ? res : p.add(AMK_DTYPE_BF16, {N});
      if (recipe != 1) p.poison(y);
      std::vector<int32_t> ins = recipe == 1 ? std::vector<int32_t>{x, w, res}
                                 : recipe == 4 ? std::vector<int32_t>{x, aux, w, res}
                                               : std::vector<int32_t>{x, aux, w};
      auto inst = make_inst(AMK_OP_FUSED, ins, {y});
      inst.params.flags = recipe << AMK_FLAG_RECIPE_SHIFT;
      inst.params.K = static_cast<int32_t>(K);
      inst.params.n_off = n_off;
      inst.params.N_tile = n_tile;
      inst.params.eps = 1e-6f;
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
      std::vector<double> pro(K);
      double ss = 0;
      for (int64_t k = 0; k < K; ++k) ss += xv[k] * xv[k];
      for (int64_t k = 0; k < K; ++k) {
        if (recipe == 1) pro[k] = xv[k];
        if (recipe == 2) pro[k] = xv[k] / std::sqrt(ss / K + static_cast<double>(1e-6f)) * nv[k];
        if (recipe >= 3) pro[k] = xv[k] / (1 + std::exp(-xv[k])) * uv[k];
      }
      const bool add = recipe == 1 || recipe == 4;
      const Expect e = matmul_expect(pro, wv, add ? &rv : nullptr, 1, N, K, n_off, n_off + n_tile, 0, 1);
      INFO("recipe " << recipe << " K " << K);
      check_tile(p, y, AMK_DTYPE_BF16, e);
      for (int64_t n = 0; n < N; ++n) {
        if (n >= n_off && n < n_off + n_tile) continue;
        if (recipe == 1) CHECK(p.get(y, n) == rv[n]);  // the residual outside the tile is unchanged
        else CHECK(is_poison(p, y, AMK_DTYPE_BF16, n));
      }
    }
  }
}
