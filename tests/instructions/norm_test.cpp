// tests/instructions/norm_test.cpp: RMSNORM, LAYERNORM and SOFTMAX against fp64 loops written here:
// odd row lengths, every float dtype, in-place use, cancellation-prone means, masked rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

TEST_CASE("RMSNORM: x * rsqrt(mean(x^2) + eps) * w per row", "[instructions][op:rmsnorm]") {
  SECTION("hand-computed") {
    RefProgram p;  // x = [3, 4]: mean(x^2) = 12.5
    const int32_t x = p.add(AMK_DTYPE_F32, {2}, {3, 4}), w = p.add(AMK_DTYPE_F32, {2}, {1, 2}), y = p.add(AMK_DTYPE_F32, {2});
    auto inst = make_inst(AMK_OP_RMSNORM, {x, w}, {y});
    inst.params.hidden = 2;
    inst.params.eps = 0.0f;
    REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    check_output(p, y, AMK_DTYPE_F32, {3 / std::sqrt(12.5), 8 / std::sqrt(12.5)});
  }
  for (int32_t dt : {AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_F16}) {
    for (int64_t H : {1, 7, 64, 129}) {
      const int64_t rows = 3;
      RefProgram p;
      const auto xv = random_values(rows * H, 1 + H, dt, -3, 3), wv = random_values(H, 2 + H, AMK_DTYPE_BF16, 0.5, 1.5);
      const int32_t x = p.add(dt, {rows, H}, xv), w = p.add(AMK_DTYPE_BF16, {H}, wv), y = p.add(dt, {rows, H});
      auto inst = make_inst(AMK_OP_RMSNORM, {x, w}, {y});
      inst.params.hidden = static_cast<int32_t>(H);
      inst.params.eps = 1e-5f;
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
      std::vector<double> want(rows * H);
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t h = 0; h < H; ++h) ss += xv[r * H + h] * xv[r * H + h];
        const double inv = 1 / std::sqrt(ss / H + static_cast<double>(1e-5f));
        for (int64_t h = 0; h < H; ++h) want[r * H + h] = xv[r * H + h] * inv * wv[h];
      }
      INFO("dtype " << dt << " H " << H);
      check_output(p, y, dt, want);
    }
  }
  SECTION("in place, per head when hidden = head_dim") {
    RefProgram p;
    const auto xv = random_values(8, 9, AMK_DTYPE_F32);
    const int32_t x = p.add(AMK_DTYPE_F32, {8}, xv), w = p.add(AMK_DTYPE_F32, {4}, {1, 1, 1, 1});
    auto inst = make_inst(AMK_OP_RMSNORM, {x, w}, {x});
    inst.params.hidden = 4;
    REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    std::vector<double> want(8);
    for (int r = 0; r < 2; ++r) {
      double ss = 0;
      for (int h = 0; h < 4; ++h) ss += xv[r * 4 + h] * xv[r * 4 + h];
      for (int h = 0; h < 4; ++h) want[r * 4 + h] = xv[r * 4 + h] / std::sqrt(ss / 4);
    }
    check_output(p, x, AMK_DTYPE_F32, want);
  }
}

TEST_CASE("LAYERNORM: biased variance, optional bias", "[instructions][op:layernorm]") {
  for (bool bias : {false, true}) {
    for (int64_t H : {1, 33, 128}) {
      RefProgram p;
      const auto xv = random_values(2 * H, 3 + H, AMK_DTYPE_F32, 5, 7);  // |mean| >> std: cancellation
      const auto wv = random_values(H, 4, AMK_DTYPE_F32), bv = random_values(H, 5, AMK_DTYPE_F32);
      const int32_t x = p.add(AMK_DTYPE_F32, {2, H}, xv), w = p.add(AMK_DTYPE_F32, {H}, wv);
      const int32_t b = p.add(AMK_DTYPE_F32, {H}, bv), y = p.add(AMK_DTYPE_BF16, {2, H});
      auto inst = bias ? make_inst(AMK_OP_LAYERNORM, {x, w, b}, {y}) : make_inst(AMK_OP_LAYERNORM, {x, w}, {y});
      inst.params.hidden = static_cast<int32_t>(H);
      inst.params.eps = 1e-5f;
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
      std::vector<double> want(2 * H), mag(2 * H);
      for (int64_t r = 0; r < 2; ++r) {
        double mean = 0, var = 0;
        for (int64_t h = 0; h < H; ++h) mean += xv[r * H + h] / H;
        for (int64_t h = 0; h < H; ++h) var += (xv[r * H + h] - mean) * (xv[r * H + h] - mean) / H;
        const double inv = 1 / std::sqrt(var + static_cast<double>(1e-5f));
        for (int64_t h = 0; h < H; ++h) {
          const double n = (xv[r * H + h] - mean) * inv * wv[h];
          want[r * H + h] = n + (bias ? bv[h] : 0.0);
          // x - mean loses |mean| * 2^-24 absolutely; scaled by inv that is the fp32 magnitude
          mag[r * H + h] = std::fabs(want[r * H + h]) + 8 * std::fabs(mean) * inv * std::fabs(wv[h]);
        }
      }
      INFO("H " << H << " bias " << bias);
      check_output(p, y, AMK_DTYPE_BF16, want, mag);
    }
  }
}

TEST_CASE("SOFTMAX over the last dimension, max-subtracted", "[instructions][op:softmax]") {
  RefProgram p;
  const int64_t rows = 3, cols = 33;
  auto xv = random_values(rows * cols, 8, AMK_DTYPE_F32, -20, 20);
  xv[5] = 1000.0;  // would overflow exp() without the max subtraction
  const int32_t x = p.add(AMK_DTYPE_F32, {rows, cols}, xv), y = p.add(AMK_DTYPE_F32, {rows, cols});
  const int32_t yb = p.add(AMK_DTYPE_BF16, {rows, cols});
  REQUIRE(p.run(make_inst(AMK_OP_SOFTMAX, {x}, {y})) == AMK_DEVERR_NONE);
  REQUIRE(p.run(make_inst(AMK_OP_SOFTMAX, {x}, {yb})) == AMK_DEVERR_NONE);
  std::vector<double> want(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::fmax(m, xv[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xv[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = std::exp(xv[r * cols + c] - m) / s;
  }
  check_output(p, y, AMK_DTYPE_F32, want);
  check_output(p, yb, AMK_DTYPE_BF16, want);

  RefProgram q;  // a fully masked row becomes zeros; in place
  const double ninf = -std::numeric_limits<double>::infinity();
  const int32_t z = q.add(AMK_DTYPE_F32, {2, 2}, {ninf, ninf, 0, std::log(3.0f)});
  REQUIRE(q.run(make_inst(AMK_OP_SOFTMAX, {z}, {z})) == AMK_DEVERR_NONE);
  check_output(q, z, AMK_DTYPE_F32, {0, 0, 0.25, 0.75});
}
