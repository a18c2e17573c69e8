// tests/instructions/rope_kv_test.cpp: ROPE and KV_APPEND, including the step-relative position
// (STEP_POS) and positions outside the cache.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {

// inv_freq[i] = theta^(-2i/hd) as the loader's F32 table holds it.
std::vector<double> inv_freq_table(int64_t hd, double theta) {
  std::vector<double> inv(hd / 2);
  for (int64_t i = 0; i < hd / 2; ++i) inv[i] = static_cast<float>(std::pow(theta, -2.0 * i / hd));
  return inv;
}

// Rotate-half in fp64; the angle is the fp32 product pos * inv_freq the spec prescribes.
std::vector<double> rope_fp64(const std::vector<double>& x, const std::vector<double>& inv, int64_t hd, int64_t pos) {
  std::vector<double> y(x.size());
  const int64_t half = hd / 2;
  for (size_t h = 0; h < x.size() / hd; ++h)
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<float>(pos) * static_cast<float>(inv[i]);
      const double x0 = x[h * hd + i], x1 = x[h * hd + i + half];
      y[h * hd + i] = x0 * std::cos(a) - x1 * std::sin(a);
      y[h * hd + i + half] = x1 * std::cos(a) + x0 * std::sin(a);
    }
  return y;
}

std::vector<double> rope_mag(const std::vector<double>& x, int64_t hd) {
  std::vector<double> m(x.size());
  for (size_t h = 0; h < x.size() / hd; ++h)
    for (int64_t i = 0; i < hd / 2; ++i) {
      const double s = std::fabs(x[h * hd + i]) + std::fabs(x[h * hd + i + hd / 2]);
      m[h * hd + i] = m[h * hd + i + hd / 2] = s;
    }
  return m;
}

}  // namespace

TEST_CASE("ROPE: hand-computed quarter turn", "[instructions][op:rope]") {
  RefProgram p;
  const double quarter = static_cast<float>(M_PI / 2);
  const int32_t x = p.add(AMK_DTYPE_F32, {2}, {1, 0}), inv = p.add(AMK_DTYPE_F32, {1}, {quarter});
  const int32_t y = p.add(AMK_DTYPE_F32, {2});
  auto inst = make_inst(AMK_OP_ROPE, {x, inv}, {y});
  inst.params.head_dim = 2;
  inst.params.pos = 1;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  CHECK(std::fabs(p.get(y, 0)) < 1e-7);  // cos(pi/2)
  CHECK(std::fabs(p.get(y, 1) - 1) < 1e-7);
  inst.params.pos = 0;  // identity
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  CHECK(p.values(y) == std::vector<double>{1, 0});
}

TEST_CASE("ROPE: rotate-half per head at head_dim 64 and 128, STEP_POS", "[instructions][op:rope]") {
  for (int64_t hd : {64, 128}) {
    for (int32_t dt : {AMK_DTYPE_F32, AMK_DTYPE_BF16}) {
      const int64_t heads = 3;
      RefProgram p;
      const auto xv = random_values(heads * hd, 100 + hd, dt, -2, 2);
      const auto inv = inv_freq_table(hd, 10000.0);
      const int32_t x = p.add(dt, {heads * hd}, xv), f = p.add(AMK_DTYPE_F32, {hd / 2}, inv);
      const int32_t y = p.add(dt, {heads * hd});
      auto inst = make_inst(AMK_OP_ROPE, {x, f}, {y});
      inst.params.head_dim = static_cast<int32_t>(hd);
      inst.params.theta = 10000.0f;
      inst.params.pos = 5;
      p.set_step(100);  // ignored without STEP_POS
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
      INFO("hd " << hd << " dtype " << dt);
      check_output(p, y, dt, rope_fp64(xv, inv, hd, 5), rope_mag(xv, hd));
      inst.params.flags = AMK_FLAG_STEP_POS;
      inst.params.pos = 2;
      p.set_step(37);  // effective pos 39
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
      check_output(p, y, dt, rope_fp64(xv, inv, hd, 39), rope_mag(xv, hd));
      const int32_t z = p.add(dt, {heads * hd}, xv);  // in place
      auto in_place = make_inst(AMK_OP_ROPE, {z, f}, {z});
      in_place.params = inst.params;
      REQUIRE(p.run(in_place) == AMK_DEVERR_NONE);
      check_output(p, z, dt, rope_fp64(xv, inv, hd, 39), rope_mag(xv, hd));
    }
  }
}

TEST_CASE("KV_APPEND writes one cache row at the effective pos", "[instructions][op:kv_append]") {
  RefProgram p;
  const int64_t S = 4, row = 6;
  const auto cv = random_values(S * row, 110, AMK_DTYPE_BF16);
  const std::vector<double> nv = {0.1f, -2, 3.5, 1.0 + std::ldexp(1, -8), 0, -0.25};
  const int32_t fresh = p.add(AMK_DTYPE_F32, {row}, nv), cache = p.add(AMK_DTYPE_BF16, {S, row}, cv);
  auto inst = make_inst(AMK_OP_KV_APPEND, {fresh, cache}, {cache});
  inst.params.pos = 2;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  auto want = cv;
  for (int64_t i = 0; i < row; ++i) want[2 * row + i] = nv[i];
  check_output(p, cache, AMK_DTYPE_BF16, want);
  CHECK(p.bits16(cache, 2 * row + 3) == 0x3f80);  // halfway rounds to even
  inst.params.pos = 0;
  inst.params.flags = AMK_FLAG_STEP_POS;
  p.set_step(3);
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  for (int64_t i = 0; i < row; ++i) want[3 * row + i] = nv[i];
  check_output(p, cache, AMK_DTYPE_BF16, want);
  const auto before = p.values(cache);
  p.set_step(4);  // pos == S
  CHECK(p.run(inst) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  inst.params.flags = 0;
  inst.params.pos = -1;
  CHECK(p.run(inst) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  CHECK(p.values(cache) == before);
  CHECK(p.guards_intact());
  // a [S, n_kv, hd] cache takes rows of n_kv * hd as well
  const int32_t c3 = p.add(AMK_DTYPE_F32, {S, 2, 3});
  inst = make_inst(AMK_OP_KV_APPEND, {fresh, c3}, {c3});
  inst.params.pos = 1;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  for (int64_t i = 0; i < S * row; ++i) CHECK(p.get(c3, i) == (i / row == 1 ? nv[i % row] : 0.0));
}

TEST_CASE("FUSED ROPE_APPEND equals ROPE then KV_APPEND, bit for bit", "[instructions][op:fused][op:rope]") {
  for (int64_t hd : {64, 128}) {
    for (int32_t dt : {AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_F16}) {
      INFO("hd " << hd << " dtype " << dt);
      const int64_t kv_heads = 2, S = 5, row = kv_heads * hd;
      RefProgram p;
      const auto xv = random_values(row, 120 + hd, dt, -2, 2);
      const auto cv = random_values(S * row, 130 + hd, dt);
      const int32_t x = p.add(dt, {row}, xv), f = p.add(AMK_DTYPE_F32, {hd / 2}, inv_freq_table(hd, 500000.0));
      const int32_t fused_cache = p.add(dt, {S, row}, cv), ref_cache = p.add(dt, {S, row}, cv);
      const int32_t rotated = p.add(dt, {row});  // the unfused lowering's k_rot: the cache's dtype
      auto fused = make_inst(AMK_OP_FUSED, {x, f, fused_cache}, {fused_cache});
      fused.params.head_dim = static_cast<int32_t>(hd);
      fused.params.pos = 1;
      fused.params.flags = AMK_FLAG_STEP_POS | (5 << AMK_FLAG_RECIPE_SHIFT);
      auto rope = make_inst(AMK_OP_ROPE, {x, f}, {rotated});
      rope.params = fused.params;
      rope.params.flags = AMK_FLAG_STEP_POS;
      auto append = make_inst(AMK_OP_KV_APPEND, {rotated, ref_cache}, {ref_cache});
      append.params = rope.params;
      for (int64_t step : {0, 2, 3}) {  // effective pos 1, 3, 4 (the last row)
        p.set_step(step);
        REQUIRE(p.run(fused) == AMK_DEVERR_NONE);
        REQUIRE(p.run(rope) == AMK_DEVERR_NONE);
        REQUIRE(p.run(append) == AMK_DEVERR_NONE);
        // Stored values compared exactly (a double holds every f32 / bf16 / f16 value).
        REQUIRE(p.values(fused_cache) == p.values(ref_cache));
      }
      // Rows never appended keep their old contents; the rotation is right (fp64 reference).
      for (int64_t i = 0; i < row; ++i) CHECK(p.get(fused_cache, i) == cv[static_cast<size_t>(i)]);
      const auto want = rope_fp64(xv, inv_freq_table(hd, 500000.0), hd, 4);
      const auto mag = rope_mag(xv, hd);
      for (int64_t i = 0; i < row; ++i)
        CHECK(std::fabs(p.get(fused_cache, 4 * row + i) - want[static_cast<size_t>(i)]) <=
              (dt == AMK_DTYPE_F32 ? 1e-5 : 1e-2) * (mag[static_cast<size_t>(i)] + 1e-3));
      // pos == S and a negative pos are errors that write nothing.
      const auto before = p.values(fused_cache);
      p.set_step(4);
      CHECK(p.run(fused) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
      fused.params.flags = 5 << AMK_FLAG_RECIPE_SHIFT;
      fused.params.pos = -1;
      CHECK(p.run(fused) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
      CHECK(p.values(fused_cache) == before);
      CHECK(p.guards_intact());
    }
  }
}

TEST_CASE("FUSED ROPE_APPEND refuses operands that do not fit", "[instructions][op:fused]") {
  RefProgram p;
  const int32_t x = p.add(AMK_DTYPE_F32, {8}), f = p.add(AMK_DTYPE_F32, {2}), cache = p.add(AMK_DTYPE_F32, {3, 8});
  const int32_t f3 = p.add(AMK_DTYPE_F32, {3}), odd_cache = p.add(AMK_DTYPE_F32, {3, 7}), other = p.add(AMK_DTYPE_F32, {3, 8});
  auto inst = make_inst(AMK_OP_FUSED, {x, f, cache}, {cache});
  inst.params.head_dim = 4;
  inst.params.flags = 5 << AMK_FLAG_RECIPE_SHIFT;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  inst.params.head_dim = 3;  // odd
  CHECK(p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  inst.params.head_dim = 4;
  auto with = [&](std::vector<int32_t> ins, int32_t out) {
    auto i2 = make_inst(AMK_OP_FUSED, std::move(ins), {out});
    i2.params = inst.params;
    return p.run(i2);
  };
  CHECK(with({x, f3, cache}, cache) == AMK_DEVERR_BAD_PARAMS);          // inv_freq is not head_dim / 2
  CHECK(with({x, f, odd_cache}, odd_cache) == AMK_DEVERR_BAD_PARAMS);  // rows of 7, not 8
  CHECK(with({x, f, other}, cache) == AMK_DEVERR_NONE);                 // the output is what is written
  CHECK(with({x, f}, cache) != AMK_DEVERR_NONE);                        // arity
  CHECK(p.guards_intact());
}
