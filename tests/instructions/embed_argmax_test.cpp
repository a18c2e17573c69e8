// tests/instructions/embed_argmax_test.cpp: EMBED (row gather, id range) and SAMPLE_ARGMAX (ties,
// NaN, dtypes).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

TEST_CASE("EMBED gathers table rows; a bad id is INDEX_OUT_OF_RANGE and writes nothing",
          "[instructions][op:embed]") {
  const int64_t V = 5, H = 3;
  RefProgram p;
  const auto tv = random_values(V * H, 120, AMK_DTYPE_BF16);
  const int32_t table = p.add(AMK_DTYPE_BF16, {V, H}, tv), ids = p.add(AMK_DTYPE_I32, {3}, {2, 0, 4});
  const int32_t y = p.add(AMK_DTYPE_F32, {3, H});
  auto inst = make_inst(AMK_OP_EMBED, {ids, table}, {y});
  inst.params.hidden = H;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  std::vector<double> want;
  for (int id : {2, 0, 4})
    for (int64_t h = 0; h < H; ++h) want.push_back(tv[id * H + h]);
  check_output(p, y, AMK_DTYPE_F32, want);
  for (int bad : {5, -1, std::numeric_limits<int32_t>::max()}) {
    p.set(ids, 1, bad);
    p.poison(y);
    CHECK(p.run(inst) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
    CHECK(p.poisoned(y));
  }
  p.set(ids, 1, 1);
  inst.params.hidden = 4;
  CHECK(p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(y));
}

TEST_CASE("SAMPLE_ARGMAX: lowest index on ties, NaN never wins", "[instructions][op:sample_argmax]") {
  const double nan = std::nan(""), inf = INFINITY;
  struct Case {
    std::vector<double> logits;
    int expect;
  };
  const Case cases[] = {
      {{1, 3, 3, 2}, 1},       {{nan, 1, 5, 5}, 2},  {{nan, nan}, 0},    {{-inf, -inf, -inf}, 0},
      {{2, nan, 7, nan}, 2},   {{-1}, 0},            {{0, inf, inf}, 1}, {{-0.0, 0.0}, 0},
  };
  for (int32_t dt : {AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_F16}) {
    for (const Case& c : cases) {
      RefProgram p;
      const int32_t l2 = p.add(dt, {static_cast<int64_t>(c.logits.size())}, c.logits);
      const int32_t tok = p.add(AMK_DTYPE_I32, {1});
      REQUIRE(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l2}, {tok})) == AMK_DEVERR_NONE);
      INFO("dtype " << dt << " first logit " << c.logits[0]);
      CHECK(p.get(tok, 0) == c.expect);
    }
  }
  RefProgram p;  // a big vocab with one known winner, bf16 logits
  auto lv = random_values(1000, 130, AMK_DTYPE_BF16);
  lv[777] = 8.0;
  lv[900] = 8.0;  // tie: 777 wins
  const int32_t l = p.add(AMK_DTYPE_BF16, {1, 1000}, lv), tok = p.add(AMK_DTYPE_I32, {1});
  REQUIRE(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l}, {tok})) == AMK_DEVERR_NONE);
  CHECK(p.get(tok, 0) == 777);
  const int32_t wrong = p.add(AMK_DTYPE_F32, {1});
  p.poison(wrong);
  CHECK(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l}, {wrong})) == AMK_DEVERR_BAD_DTYPE);
  CHECK(p.poisoned(wrong));
}

namespace {

// SAMPLE_ARGMAX tile `t` of `tile` logits (an amk extension) into slot t of `cand`.
amk_instruction_t argmax_tile(int32_t logits, int32_t cand, int64_t n, int64_t tile, int64_t t) {
  amk_instruction_t inst = make_inst(AMK_OP_SAMPLE_ARGMAX, {logits}, {cand});
  inst.params.n_off = static_cast<int32_t>(t * tile);
  inst.params.N_tile = static_cast<int32_t>(std::min(tile, n - t * tile));
  inst.params.m_off = static_cast<int32_t>(t);
  return inst;
}

}  // namespace

TEST_CASE("SAMPLE_ARGMAX tiles and their combine pick the whole scan's token", "[instructions][op:sample_argmax]") {
  const double nan = std::nan("");
  // Ties across tiles, NaN, an all-NaN tile, all NaN: for every tile size the combine over the
  // tiles' candidates gives what one scan gives.
  const std::vector<std::vector<double>> cases = {
      {1, 3, 3, 2, 0, 3, 3}, {nan, nan, nan, 5, 5, 1, nan}, {nan, nan, nan, nan, nan},
      {-INFINITY, -INFINITY, -INFINITY}, {2, nan, 7, nan, 7, 7, -1, 8}, {4}};
  for (int32_t dt : {AMK_DTYPE_F32, AMK_DTYPE_BF16}) {
    for (const auto& lv : cases) {
      const int64_t n = static_cast<int64_t>(lv.size());
      for (int64_t tile = 1; tile <= n; ++tile) {
        const int64_t tiles = (n + tile - 1) / tile;
        RefProgram p;
        const int32_t l = p.add(dt, {n}, lv), cand = p.add(AMK_DTYPE_I32, {tiles});
        const int32_t tok = p.add(AMK_DTYPE_I32, {1}), whole = p.add(AMK_DTYPE_I32, {1});
        REQUIRE(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l}, {whole})) == AMK_DEVERR_NONE);
        for (int64_t t = 0; t < tiles; ++t) {
          REQUIRE(p.run(argmax_tile(l, cand, n, tile, t)) == AMK_DEVERR_NONE);
          // A tile's candidate is inside the tile (its first index when it holds only NaN).
          CHECK(p.get(cand, t) >= t * tile);
          CHECK(p.get(cand, t) < std::min(n, (t + 1) * tile));
        }
        REQUIRE(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l, cand}, {tok})) == AMK_DEVERR_NONE);
        INFO("dtype " << dt << " n " << n << " tile " << tile);
        CHECK(p.get(tok, 0) == p.get(whole, 0));
      }
    }
  }
}

TEST_CASE("SAMPLE_ARGMAX tiles and combine refuse bad operands and write nothing", "[instructions][op:sample_argmax]") {
  RefProgram p;
  const int32_t l = p.add(AMK_DTYPE_F32, {10}, {0, 1, 2, 3, 9, 5, 6, 7, 8, 4});
  const int32_t cand = p.add(AMK_DTYPE_I32, {2}, {4, 9}), tok = p.add(AMK_DTYPE_I32, {1});
  const int32_t cand_f = p.add(AMK_DTYPE_F32, {2}, {4, 9}), two = p.add(AMK_DTYPE_I32, {2});
  REQUIRE(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l, cand}, {tok})) == AMK_DEVERR_NONE);
  CHECK(p.get(tok, 0) == 4);
  struct Bad {
    const char* what;
    int32_t n_off, n_tile, m_off, want;
  };
  for (const Bad& b : {Bad{"tile past the logits", 5, 6, 0, AMK_DEVERR_BAD_PARAMS},
                       Bad{"negative n_off", -1, 3, 0, AMK_DEVERR_BAD_PARAMS},
                       Bad{"negative N_tile", 0, -2, 0, AMK_DEVERR_BAD_PARAMS},
                       Bad{"slot past the candidates", 0, 5, 2, AMK_DEVERR_BAD_PARAMS},
                       Bad{"negative slot", 0, 5, -1, AMK_DEVERR_BAD_PARAMS}}) {
    INFO(b.what);
    amk_instruction_t inst = make_inst(AMK_OP_SAMPLE_ARGMAX, {l}, {two});
    inst.params.n_off = b.n_off;
    inst.params.N_tile = b.n_tile;
    inst.params.m_off = b.m_off;
    p.poison(two);
    CHECK(p.run(inst) == b.want);
    CHECK(p.poisoned(two));
  }
  // The whole scan (no N_tile) into two elements, a combine with a tile, non-I32 candidates.
  p.poison(two);
  CHECK(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l}, {two})) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(two));
  amk_instruction_t tiled_combine = make_inst(AMK_OP_SAMPLE_ARGMAX, {l, cand}, {tok});
  tiled_combine.params.N_tile = 5;
  p.poison(tok);
  CHECK(p.run(tiled_combine) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l, cand_f}, {tok})) == AMK_DEVERR_BAD_DTYPE);
  // A candidate outside the logits is INDEX_OUT_OF_RANGE, found before the token is written.
  for (int bad : {10, -1, std::numeric_limits<int32_t>::max()}) {
    p.set(cand, 1, bad);
    CHECK(p.run(make_inst(AMK_OP_SAMPLE_ARGMAX, {l, cand}, {tok})) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
    CHECK(p.poisoned(tok));
  }
}
