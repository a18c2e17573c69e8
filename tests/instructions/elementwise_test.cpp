// tests/instructions/elementwise_test.cpp: NOP, COPY, SILU_MUL, GELU, ADD, MUL and ALLREDUCE_SHARD
// against fp64 loops written here, over f32 / bf16 / f16 outputs, odd sizes and in-place use.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {
const int32_t kFloatDtypes[] = {AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_F16};
}

TEST_CASE("NOP succeeds and touches nothing", "[instructions][op:nop]") {
  RefProgram p;
  const int32_t y = p.add(AMK_DTYPE_F32, {4});
  p.poison(y);
  CHECK(p.run(make_inst(AMK_OP_NOP, {}, {})) == AMK_DEVERR_NONE);
  CHECK(p.run(make_inst(AMK_OP_NOP, {y}, {y})) == AMK_DEVERR_NONE);
  CHECK(p.poisoned(y));
}

TEST_CASE("COPY casts once to the output dtype", "[instructions][op:copy]") {
  RefProgram p;
  // 1 + 2^-8 and 1 + 3*2^-8 are exactly halfway between bf16 neighbours: both round to even.
  const std::vector<double> xs = {1.0 + std::ldexp(1, -8), 1.0 + 3 * std::ldexp(1, -8), -2.5, 0.1f, 70000.0};
  const int32_t x = p.add(AMK_DTYPE_F32, {5}, xs);
  const int32_t yb = p.add(AMK_DTYPE_BF16, {5}), yh = p.add(AMK_DTYPE_F16, {1, 5}), yf = p.add(AMK_DTYPE_F32, {5});
  REQUIRE(p.run(make_inst(AMK_OP_COPY, {x}, {yb})) == AMK_DEVERR_NONE);
  REQUIRE(p.run(make_inst(AMK_OP_COPY, {x}, {yh})) == AMK_DEVERR_NONE);
  REQUIRE(p.run(make_inst(AMK_OP_COPY, {yb}, {yf})) == AMK_DEVERR_NONE);
  CHECK(p.bits16(yb, 0) == 0x3f80);
  CHECK(p.bits16(yb, 1) == 0x3f82);
  CHECK(p.get(yb, 2) == -2.5);
  CHECK(std::fabs(p.get(yb, 3) - 0.1) <= bf16_ulp(0.1) / 2);
  CHECK(p.get(yh, 4) == INFINITY);  // beyond f16 range
  CHECK(p.get(yf, 1) == p.get(yb, 1));
  CHECK(p.guards_intact());
}

TEST_CASE("COPY of the same dtype moves bits, strided views included", "[instructions][op:copy]") {
  RefProgram p;
  const auto v = random_values(21, 1, AMK_DTYPE_BF16);
  const int32_t x = p.add_strided(AMK_DTYPE_BF16, {3, 7}, {9, 1}, v);  // padded rows
  const int32_t y = p.add(AMK_DTYPE_BF16, {21});
  REQUIRE(p.run(make_inst(AMK_OP_COPY, {x}, {y})) == AMK_DEVERR_NONE);
  CHECK(p.values(y) == v);
  const int32_t q = p.add(AMK_DTYPE_I4, {7}, {-8, 7, 0, -1, 3, 5, -3}), q2 = p.add(AMK_DTYPE_I4, {7});
  REQUIRE(p.run(make_inst(AMK_OP_COPY, {q}, {q2})) == AMK_DEVERR_NONE);
  CHECK(p.values(q2) == p.values(q));
  CHECK(p.guards_intact());
}

TEST_CASE("SILU_MUL matches gate * sigmoid(gate) * up", "[instructions][op:silu_mul]") {
  for (int32_t dt : kFloatDtypes) {
    for (int64_t n : {1, 7, 33, 129}) {
      RefProgram p;
      const auto g = random_values(n, 10 + n, dt, -8, 8), u = random_values(n, 20 + n, dt, -2, 2);
      const int32_t gi = p.add(dt, {n}, g), ui = p.add(dt, {n}, u), y = p.add(dt, {1, n});
      REQUIRE(p.run(make_inst(AMK_OP_SILU_MUL, {gi, ui}, {y})) == AMK_DEVERR_NONE);
      std::vector<double> want(n);
      for (int64_t i = 0; i < n; ++i) want[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      check_output(p, y, dt, want);
    }
  }
  RefProgram p;  // saturation: no NaN from exp overflow; in place over gate
  const int32_t g = p.add(AMK_DTYPE_F32, {3}, {-200, 200, 0}), u = p.add(AMK_DTYPE_F32, {3}, {1, 2, 3});
  REQUIRE(p.run(make_inst(AMK_OP_SILU_MUL, {g, u}, {g})) == AMK_DEVERR_NONE);
  CHECK(p.values(g) == std::vector<double>{0.0, 400.0, 0.0});
}

TEST_CASE("GELU is the erf form", "[instructions][op:gelu]") {
  for (int32_t dt : kFloatDtypes) {
    RefProgram p;
    const auto xs = random_values(33, 3, dt, -6, 6);
    const int32_t x = p.add(dt, {33}, xs), y = p.add(dt, {33});
    REQUIRE(p.run(make_inst(AMK_OP_GELU, {x}, {y})) == AMK_DEVERR_NONE);
    std::vector<double> want(33), mag(33);
    for (size_t i = 0; i < 33; ++i) {
      want[i] = 0.5 * xs[i] * (1 + std::erf(xs[i] / std::sqrt(2.0)));
      mag[i] = std::fabs(xs[i]);  // erf's own fp32 error scales with x, not with the (tiny) result
    }
    check_output(p, y, dt, want, mag);
  }
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_F32, {3}, {0, 1, -1});
  REQUIRE(p.run(make_inst(AMK_OP_GELU, {x}, {x})) == AMK_DEVERR_NONE);
  check_output(p, x, AMK_DTYPE_F32, {0.0, 0.8413447460685429, -0.15865525393145707});
}

TEST_CASE("ADD and MUL are elementwise, mixed dtypes, in place", "[instructions][op:add][op:mul]") {
  RefProgram p;
  const auto av = random_values(129, 4, AMK_DTYPE_BF16), bv = random_values(129, 5, AMK_DTYPE_F32);
  const int32_t a = p.add(AMK_DTYPE_BF16, {129}, av), b = p.add(AMK_DTYPE_F32, {1, 129}, bv);
  const int32_t sum = p.add(AMK_DTYPE_F32, {129}), prod = p.add(AMK_DTYPE_BF16, {129}), sc = p.add(AMK_DTYPE_F16, {129});
  REQUIRE(p.run(make_inst(AMK_OP_ADD, {a, b}, {sum})) == AMK_DEVERR_NONE);
  REQUIRE(p.run(make_inst(AMK_OP_MUL, {a, b}, {prod})) == AMK_DEVERR_NONE);
  auto inst = make_inst(AMK_OP_MUL, {a}, {sc});
  inst.params.scale = 0.125f;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  std::vector<double> ws(129), wp(129), wc(129);
  for (size_t i = 0; i < 129; ++i) {
    ws[i] = av[i] + bv[i];
    wp[i] = av[i] * bv[i];
    wc[i] = av[i] * 0.125;
  }
  check_output(p, sum, AMK_DTYPE_F32, ws, {}, "add");
  check_output(p, prod, AMK_DTYPE_BF16, wp, {}, "mul");
  check_output(p, sc, AMK_DTYPE_F16, wc, {}, "mul scale");
  // in-place residual add: y is a
  const int32_t r = p.add(AMK_DTYPE_F32, {3}, {1, 2, 3}), d = p.add(AMK_DTYPE_F32, {3}, {0.5, -2, 4});
  REQUIRE(p.run(make_inst(AMK_OP_ADD, {r, d}, {r})) == AMK_DEVERR_NONE);
  CHECK(p.values(r) == std::vector<double>{1.5, 0, 7});
}

TEST_CASE("ALLREDUCE_SHARD sums 1..8 shards", "[instructions][op:allreduce_shard]") {
  for (int k : {1, 3, 8}) {
    RefProgram p;
    std::vector<int32_t> ins;
    std::vector<std::vector<double>> vals;
    for (int s = 0; s < k; ++s) {
      const int32_t dt = s % 2 ? AMK_DTYPE_BF16 : AMK_DTYPE_F32;  // shards of mixed dtypes
      vals.push_back(random_values(7, 100 + s, dt));
      ins.push_back(p.add(dt, {7}, vals.back()));
    }
    const int32_t y = p.add(AMK_DTYPE_F32, {7});
    REQUIRE(p.run(make_inst(AMK_OP_ALLREDUCE_SHARD, ins, {y})) == AMK_DEVERR_NONE);
    std::vector<double> want(7, 0.0), mag(7, 0.0);
    for (int s = 0; s < k; ++s)
      for (size_t i = 0; i < 7; ++i) {
        want[i] += vals[s][i];
        mag[i] += std::fabs(vals[s][i]);
      }
    check_output(p, y, AMK_DTYPE_F32, want, mag);
  }
}
