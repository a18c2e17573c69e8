// tests/loader/dtype_cast_test.cpp: element conversions used for random weights and constants:
// known encodings of every narrow float format, round-to-nearest-even ties, saturation, and the
// fast array paths agreeing bit for bit with the generic encoder.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "loader/dtype_cast.h"

using namespace amk;
using namespace amk::loader;

namespace {

template <typename T>
T bits_of(ir::DType d, float v) {
  T out{};
  dtype_store(d, &out, 0, v);
  return out;
}

}  // namespace

TEST_CASE("dtype_cast: known encodings", "[loader]") {
  using D = ir::DType;
  CHECK(bits_of<uint16_t>(D::BF16, 1.0f) == 0x3f80);
  CHECK(bits_of<uint16_t>(D::BF16, -2.0f) == 0xc000);
  CHECK(bits_of<uint16_t>(D::BF16, 1.0f + 0x1.0p-8f) == 0x3f80);             // tie -> even (down)
  CHECK(bits_of<uint16_t>(D::BF16, 1.0f + 3 * 0x1.0p-8f) == 0x3f82);         // tie -> even (up)
  CHECK(bits_of<uint16_t>(D::F16, 1.0f) == 0x3c00);
  CHECK(bits_of<uint16_t>(D::F16, 65504.0f) == 0x7bff);
  CHECK(bits_of<uint16_t>(D::F16, 65520.0f) == 0x7c00);                      // rounds to inf
  CHECK(bits_of<uint16_t>(D::F16, 0x1.0p-24f) == 0x0001);                    // smallest subnormal
  CHECK(bits_of<uint16_t>(D::F16, 0x1.0p-26f) == 0x0000);                    // below half of it
  CHECK(bits_of<uint8_t>(D::F8E4M3, 448.0f) == 0x7e);
  CHECK(bits_of<uint8_t>(D::F8E4M3, 1000.0f) == 0x7e);                       // saturates (no inf)
  CHECK(bits_of<uint8_t>(D::F8E4M3, -1.0f) == 0xb8);
  CHECK(bits_of<uint8_t>(D::F8E5M2, 57344.0f) == 0x7b);
  CHECK(bits_of<uint8_t>(D::F8E5M2, 1.0f) == 0x3c);
  CHECK(bits_of<int8_t>(D::I8, 300.0f) == 127);
  CHECK(bits_of<int8_t>(D::I8, -2.5f) == -2);  // nearest even
  CHECK(bits_of<uint8_t>(D::Bool, 0.25f) == 1);
  uint8_t packed = 0;
  dtype_store(D::I4, &packed, 0, -3.0f);
  dtype_store(D::I4, &packed, 1, 9.0f);  // saturates to 7
  CHECK(packed == 0x7d);
  CHECK(dtype_load(D::I4, &packed, 0) == -3.0f);
  CHECK(dtype_load(D::I4, &packed, 1) == 7.0f);
}

TEST_CASE("dtype_cast: loads invert stores for every representable value", "[loader]") {
  for (ir::DType d : {ir::DType::F8E4M3, ir::DType::F8E5M2}) {
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<uint8_t>(b);
      const float v = dtype_load(d, &byte, 0);
      if (std::isnan(v) || std::isinf(v)) continue;
      INFO("dtype " << static_cast<int>(d) << " byte " << b);
      CHECK(bits_of<uint8_t>(d, v) == byte);
    }
  }
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const auto half = static_cast<uint16_t>(h);
    for (ir::DType d : {ir::DType::F16, ir::DType::BF16}) {
      const float v = dtype_load(d, &half, 0);
      if (std::isnan(v)) continue;
      CHECK(bits_of<uint16_t>(d, v) == half);
    }
  }
}

TEST_CASE("dtype_cast: fast array paths match the generic encoder bit for bit", "[loader]") {
  std::mt19937 rng(7);
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 0x1.0p-14f, 0x1.0p-15f,
                               0x1.0p-24f, 0x1.8p-25f, 1e-30f, 3.0e38f, std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 20000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isnan(f)) values.push_back(f);
    values.push_back(std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 60) - 40));
  }
  for (ir::DType d : {ir::DType::F16, ir::DType::BF16, ir::DType::F32}) {
    std::vector<uint16_t> fast(values.size() * 2), slow(values.size() * 2);
    dtype_store_array(d, fast.data(), 0, values.data(), static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) dtype_store(d, slow.data(), static_cast<int64_t>(i), values[i]);
    CHECK(fast == slow);
  }
}
