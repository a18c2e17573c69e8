// tests/instructions/dtype_test.cpp: the scalar conversions of instructions/common/dtype.h against
// hand-computed bit patterns and an independent fp64 rounding of every case class.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "instructions/common/dtype.h"
#include "tests/instructions/ref_harness.h"

using namespace amk::instructions;
using amk::test::f16_value;

namespace {
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }
bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
}  // namespace

TEST_CASE("f32 -> bf16 rounds to nearest even and keeps NaN", "[instructions]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);               // halfway, 0x3f80 is even
  CHECK(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);           // halfway, 0x3f82 is even
  CHECK(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);    // just above halfway
  CHECK(f32_to_bf16(-(1.0f + 3 * 0x1p-8f)) == 0xbf82);
  CHECK(f32_to_bf16(from_bits(0x7f7fffffu)) == 0x7f80);       // FLT_MAX rounds up to inf
  CHECK(f32_to_bf16(from_bits(0x7f7f7fffu)) == 0x7f7f);
  CHECK(f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_bf16(from_bits(0x00010000u)) == 0x0001);       // subnormals round like normals
  CHECK(f32_to_bf16(from_bits(0x00008000u)) == 0x0000);
  CHECK(f32_to_bf16(from_bits(0x00018000u)) == 0x0002);
  CHECK(bf16_is_nan(f32_to_bf16(std::nanf(""))));
  CHECK(bf16_is_nan(f32_to_bf16(from_bits(0x7f800001u))));    // payload only in the low half
  CHECK(bf16_is_nan(f32_to_bf16(from_bits(0xffffffffu))));
  CHECK((f32_to_bf16(from_bits(0xffc00000u)) & 0x8000) != 0);  // sign kept
  for (uint32_t h = 0; h < 0x10000u; ++h)
    if (!bf16_is_nan(static_cast<uint16_t>(h))) REQUIRE(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("f16 <-> f32: exhaustive decode, hand-picked rounding cases", "[instructions]") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = f16_to_f32(b);
    if (f16_is_nan(b)) {
      REQUIRE(std::isnan(f));
      REQUIRE(f16_is_nan(f32_to_f16(f)));
    } else {
      REQUIRE(static_cast<double>(f) == f16_value(b));
      REQUIRE(f32_to_f16(f) == b);
    }
  }
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);        // halfway to even
  CHECK(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);               // halfway between max and 2^16: to inf
  CHECK(f32_to_f16(1e10f) == 0x7c00);
  CHECK(f32_to_f16(-1e10f) == 0xfc00);
  CHECK(f32_to_f16(0x1p-24f) == 0x0001);
  CHECK(f32_to_f16(0x1p-25f) == 0x0000);               // halfway to zero: even
  CHECK(f32_to_f16(1.5f * 0x1p-25f) == 0x0001);
  CHECK(f32_to_f16(3 * 0x1p-25f) == 0x0002);           // 1.5 units: even
  CHECK(f32_to_f16(0x1p-14f - 0x1p-25f) == 0x0400);    // 1023.5 units: carries to the smallest normal
  CHECK(f32_to_f16(-0x1p-30f) == 0x8000);
  CHECK(f32_to_f16(from_bits(0x00000001u)) == 0x0000);
}

TEST_CASE("f32 -> f16 matches an fp64 round-to-nearest-even on random inputs", "[instructions]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> exp_dist(127 - 30, 127 + 16), mant_dist(0, 0x7fffff);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = (rng() & 0x80000000u) | (exp_dist(rng) << 23) | mant_dist(rng);
    const float f = from_bits(u);
    const double a = std::fabs(static_cast<double>(f));
    const double ulp = amk::test::f16_ulp(a);
    const double r = std::nearbyint(a / ulp) * ulp;  // exact scaling by a power of two
    const uint16_t got = f32_to_f16(f);
    if (r > 65504.0) {
      REQUIRE((got & 0x7fff) == 0x7c00);
    } else {
      INFO("f = " << f);
      REQUIRE(f16_value(got) == (f < 0 ? -r : r));
    }
  }
}

TEST_CASE("typed element load/store covers every supported dtype", "[instructions]") {
  const int8_t i8[2] = {-128, 127};
  CHECK(load_elem(i8, AMK_DTYPE_I8, 0) == -128.0f);
  CHECK(load_elem(i8, AMK_DTYPE_I8, 1) == 127.0f);
  const uint8_t i4[2] = {0x8f, 0x71};  // nibbles in order: 0xf, 0x8, 0x1, 0x7 -> -1, -8, 1, 7
  CHECK(load_elem(i4, AMK_DTYPE_I4, 0) == -1.0f);
  CHECK(load_elem(i4, AMK_DTYPE_I4, 1) == -8.0f);
  CHECK(load_elem(i4, AMK_DTYPE_I4, 2) == 1.0f);
  CHECK(load_elem(i4, AMK_DTYPE_I4, 3) == 7.0f);
  const int32_t i32 = -7;
  CHECK(load_elem(&i32, AMK_DTYPE_I32, 0) == -7.0f);
  uint16_t h = 0;
  store_elem(&h, AMK_DTYPE_BF16, 0, 1.0f + 3 * 0x1p-8f);
  CHECK(h == 0x3f82);
  store_elem(&h, AMK_DTYPE_F16, 0, 1.0f + 3 * 0x1p-11f);
  CHECK(h == 0x3c02);
  CHECK(load_elem(&h, AMK_DTYPE_F16, 0) == 1.0f + 2 * 0x1p-10f);
}
