// tests/instructions/mlp_fold_test.cpp: FUSED RMSNORM_MLP_FOLD and GEMV_ADD_COPY on the CPU
// reference, against fp64 arithmetic written here from the unfolded MLP (gate, up and down_proj as
// separate matrices, the stacked weight built by this test): tiles that add into one F32 output in
// any order, concurrent tiles whose adds must all land, and the decode's refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <thread>

#include "instructions/fused.h"
#include "instructions/mlp_fold.h"
#include "ir/opspec.h"
#include "ir/params.h"
#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {

/// A random MLP of hidden K and intermediate I: gate, up [I, K], down [K, I], the norm weight,
/// the input x and the residual h (F32), all exact in their dtypes.
struct Mlp {
  int64_t K, I;
  std::vector<double> gate, up, down, norm_w, x, h;
  Mlp(int64_t k, int64_t i, uint32_t seed) : K(k), I(i) {
    gate = random_values(I * K, seed, AMK_DTYPE_BF16);
    up = random_values(I * K, seed + 1, AMK_DTYPE_BF16);
    down = random_values(K * I, seed + 2, AMK_DTYPE_BF16);
    norm_w = random_values(K, seed + 3, AMK_DTYPE_BF16, 0.5, 1.5);
    x = random_values(K, seed + 4, AMK_DTYPE_F32, -2, 2);
    h = random_values(K, seed + 5, AMK_DTYPE_F32, -2, 2);
  }
  /// The stacked [I, 3, K] weight: gate row n, up row n, down_proj's column n.
  std::vector<double> stacked() const {
    std::vector<double> s(static_cast<size_t>(3 * I * K));
    for (int64_t n = 0; n < I; ++n)
      for (int64_t k = 0; k < K; ++k) {
        s[(3 * n + 0) * K + k] = gate[n * K + k];
        s[(3 * n + 1) * K + k] = up[n * K + k];
        s[(3 * n + 2) * K + k] = down[k * I + n];
      }
    return s;
  }
  /// h + down(silu(gate(xn)) * up(xn)) over columns [n0, n1), and the magnitudes of its terms.
  void expect(int64_t n0, int64_t n1, std::vector<double>& want, std::vector<double>& mag) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(K) + static_cast<double>(1e-6f));
    want = h;
    mag.assign(static_cast<size_t>(K), 0.0);
    for (int64_t k = 0; k < K; ++k) mag[k] = std::fabs(h[k]);
    for (int64_t n = n0; n < n1; ++n) {
      double g = 0, u = 0, gm = 0, um = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double xn = x[k] * inv * norm_w[k];
        g += xn * gate[n * K + k];
        u += xn * up[n * K + k];
        gm += std::fabs(xn * gate[n * K + k]);
        um += std::fabs(xn * up[n * K + k]);
      }
      const double a = g / (1 + std::exp(-g)) * u;
      const double am = (std::fabs(g) + gm) * (std::fabs(u) + um);  // what fp32 rounding of a works at
      for (int64_t k = 0; k < K; ++k) {
        want[k] += a * down[k * I + n];
        mag[k] += (std::fabs(a) + am) * std::fabs(down[k * I + n]);
      }
    }
  }
};

/// The F32 value of four kPoison bytes: what an untouched element of a poisoned F32 buffer holds.
double poison_f32() {
  const uint32_t u = 0x01010101u * kPoison;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

amk_instruction_t fold_inst(int32_t x, int32_t nw, int32_t w, int32_t out, int64_t K, int64_t n_off, int64_t n_tile) {
  auto inst = make_inst(AMK_OP_FUSED, {x, nw, w}, {out});
  inst.params.flags = AMK_FLAG_ACCUMULATE | (amk::instructions::kRecipeMlpFold << AMK_FLAG_RECIPE_SHIFT);
  inst.params.K = static_cast<int32_t>(K);
  inst.params.n_off = static_cast<int32_t>(n_off);
  inst.params.N_tile = static_cast<int32_t>(n_tile);
  inst.params.eps = 1e-6f;
  return inst;
}

}  // namespace

TEST_CASE("MLP fold: recipe ids and the ACCUMULATE bit agree with the IR", "[instructions][op:fused]") {
  STATIC_REQUIRE(amk::instructions::kRecipeMlpFold == static_cast<int32_t>(amk::ir::FusedRecipe::RmsNormMlpFold));
  STATIC_REQUIRE(amk::instructions::kRecipeGemvAddCopy == static_cast<int32_t>(amk::ir::FusedRecipe::GemvAddCopy));
  STATIC_REQUIRE(AMK_FLAG_ACCUMULATE == amk::ir::kFlagAccumulate);
}

TEST_CASE("RMSNORM_MLP_FOLD: tiles in any order add up to the unfolded MLP plus the residual", "[instructions][op:fused]") {
  for (int64_t K : {16, 40}) {
    const int64_t I = 12;
    const Mlp m(K, I, static_cast<uint32_t>(60 + K));
    for (bool reversed : {false, true}) {
      RefProgram p;
      const int32_t x = p.add(AMK_DTYPE_F32, {1, K}, m.x), nw = p.add(AMK_DTYPE_BF16, {K}, m.norm_w);
      const int32_t w = p.add(AMK_DTYPE_BF16, {I, 3, K}, m.stacked()), out = p.add(AMK_DTYPE_F32, {1, K}, m.h);
      const std::vector<std::pair<int64_t, int64_t>> tiles = {{0, 5}, {5, 4}, {9, 3}};
      for (size_t t = 0; t < tiles.size(); ++t) {
        const auto& tile = tiles[reversed ? tiles.size() - 1 - t : t];
        REQUIRE(p.run(fold_inst(x, nw, w, out, K, tile.first, tile.second)) == AMK_DEVERR_NONE);
      }
      std::vector<double> want, mag;
      m.expect(0, I, want, mag);
      INFO("K " << K << (reversed ? ", tiles in reverse" : ""));
      check_output(p, out, AMK_DTYPE_F32, want, mag, "h");
    }
  }
}

TEST_CASE("RMSNORM_MLP_FOLD: one tile adds only its own columns' share", "[instructions][op:fused]") {
  const int64_t K = 24, I = 10;
  const Mlp m(K, I, 71);
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_F32, {K}, m.x), nw = p.add(AMK_DTYPE_BF16, {K}, m.norm_w);
  const int32_t w = p.add(AMK_DTYPE_BF16, {I, 3, K}, m.stacked()), out = p.add(AMK_DTYPE_F32, {K}, m.h);
  REQUIRE(p.run(fold_inst(x, nw, w, out, K, 3, 4)) == AMK_DEVERR_NONE);
  std::vector<double> want, mag;
  m.expect(3, 7, want, mag);
  check_output(p, out, AMK_DTYPE_F32, want, mag, "h");
}

TEST_CASE("RMSNORM_MLP_FOLD: concurrent tiles lose no add", "[instructions][op:fused]") {
  // Eight threads run eight disjoint tiles into one output at once, many times over: a plain
  // load-add-store would drop whole tiles' contributions to some elements.
  const int64_t K = 256, I = 64, tiles = 8;
  const Mlp m(K, I, 81);
  std::vector<double> want, mag;
  m.expect(0, I, want, mag);
  for (int round = 0; round < 20; ++round) {
    RefProgram p;
    const int32_t x = p.add(AMK_DTYPE_F32, {K}, m.x), nw = p.add(AMK_DTYPE_BF16, {K}, m.norm_w);
    const int32_t w = p.add(AMK_DTYPE_BF16, {I, 3, K}, m.stacked()), out = p.add(AMK_DTYPE_F32, {K}, m.h);
    const amk_program_t& view = p.view();
    std::vector<std::thread> workers;
    std::vector<int32_t> rc(tiles, -1);
    for (int64_t t = 0; t < tiles; ++t)
      workers.emplace_back([&, t] {
        rc[static_cast<size_t>(t)] = amk::instructions::cpu_execute(view, fold_inst(x, nw, w, out, K, t * I / tiles, I / tiles));
      });
    for (auto& th : workers) th.join();
    for (int32_t r : rc) REQUIRE(r == AMK_DEVERR_NONE);
    INFO("round " << round);
    check_output(p, out, AMK_DTYPE_F32, want, mag, "h");
  }
}

TEST_CASE("RMSNORM_MLP_FOLD: the decode refuses what the fold cannot run, and writes nothing", "[instructions][op:fused]") {
  const int64_t K = 8, I = 4;
  const Mlp m(K, I, 91);
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_F32, {K}, m.x), nw = p.add(AMK_DTYPE_BF16, {K}, m.norm_w);
  const int32_t w = p.add(AMK_DTYPE_BF16, {I, 3, K}, m.stacked()), out = p.add(AMK_DTYPE_F32, {K});
  const int32_t out_bf16 = p.add(AMK_DTYPE_BF16, {K}), w2 = p.add(AMK_DTYPE_BF16, {I, 2, K});
  const int32_t nw_short = p.add(AMK_DTYPE_BF16, {K - 1});
  p.poison(out);
  p.poison(out_bf16);
  auto no_flag = fold_inst(x, nw, w, out, K, 0, I);
  no_flag.params.flags &= ~AMK_FLAG_ACCUMULATE;
  CHECK(p.run(no_flag) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(fold_inst(x, nw, w, out_bf16, K, 0, I)) == AMK_DEVERR_BAD_DTYPE);
  CHECK(p.run(fold_inst(x, nw, w2, out, K, 0, I)) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(fold_inst(x, nw_short, w, out, K, 0, I)) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(fold_inst(x, nw, w, out, K, 1, I)) == AMK_DEVERR_BAD_PARAMS);  // past I
  CHECK(p.run(fold_inst(x, nw, w, out, K + 1, 0, I)) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(out));
  CHECK(p.poisoned(out_bf16));
  CHECK(p.guards_intact());
}

TEST_CASE("GEMV_ADD_COPY: the tile written to both outputs, nothing else", "[instructions][op:fused]") {
  const int64_t K = 24, N = 10, n_off = 2, n_tile = 5;
  const auto xv = random_values(K, 101, AMK_DTYPE_BF16), wv = random_values(N * K, 102, AMK_DTYPE_BF16);
  const auto hv = random_values(N, 103, AMK_DTYPE_F32, -2, 2);
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_BF16, {K}, xv), w = p.add(AMK_DTYPE_BF16, {N, K}, wv);
  const int32_t h = p.add(AMK_DTYPE_F32, {N}, hv), copy = p.add(AMK_DTYPE_F32, {N});
  p.poison(copy);
  auto inst = make_inst(AMK_OP_FUSED, {x, w, h}, {h, copy});
  inst.params.flags = amk::instructions::kRecipeGemvAddCopy << AMK_FLAG_RECIPE_SHIFT;
  inst.params.K = static_cast<int32_t>(K);
  inst.params.n_off = n_off;
  inst.params.N_tile = n_tile;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  for (int64_t n = 0; n < N; ++n) {
    INFO("n " << n);
    if (n < n_off || n >= n_off + n_tile) {
      CHECK(p.get(h, n) == hv[n]);
      CHECK(p.get(copy, n) == poison_f32());
      continue;
    }
    double want = hv[n], mag = std::fabs(hv[n]);
    for (int64_t k = 0; k < K; ++k) {
      want += xv[k] * wv[n * K + k];
      mag += std::fabs(xv[k] * wv[n * K + k]);
    }
    CHECK(std::fabs(p.get(h, n) - want) <= tolerance(AMK_DTYPE_F32, want, mag));
    CHECK(p.get(copy, n) == p.get(h, n));
  }
  auto one_out = make_inst(AMK_OP_FUSED, {x, w, h}, {h});
  one_out.params = inst.params;
  CHECK(p.run(one_out) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.guards_intact());
}
