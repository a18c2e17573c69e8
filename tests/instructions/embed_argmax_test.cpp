// tests/instructions/embed_argmax_test.cpp: EMBED (row gather, id range) and SAMPLE_ARGMAX (ties,
// NaN, dtypes).
#include <catch2/catch.hpp>

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
