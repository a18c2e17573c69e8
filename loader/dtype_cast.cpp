// loader/dtype_cast.cpp: element conversions. Narrow floats go through one generic minifloat
// encoder in double precision (exact: every step is a power-of-two scaling or one rounding).
#include "loader/dtype_cast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace amk::loader {
namespace {

/// A binary float format with `ebits` exponent and `mbits` mantissa bits. `ieee` formats reserve
/// the top exponent for inf/NaN; F8E4M3 ("fn") uses it for numbers and keeps only S.1111.111 as NaN.
struct MiniFloat {
  int ebits;
  int mbits;
  bool ieee;
  int bias() const { return (1 << (ebits - 1)) - 1; }
  double max_finite() const {
    const int emax = ieee ? (1 << ebits) - 2 - bias() : (1 << ebits) - 1 - bias();
    const int mant_max = ieee ? (1 << mbits) - 1 : (1 << mbits) - 2;
    return std::ldexp(1.0 + mant_max / double(1 << mbits), emax);
  }
};

constexpr MiniFloat kF16{5, 10, true};
constexpr MiniFloat kBF16{8, 7, true};
constexpr MiniFloat kE4M3{4, 3, false};
constexpr MiniFloat kE5M2{5, 2, true};

uint32_t encode(const MiniFloat& f, float v) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u;
  const uint32_t exp_all = (1u << f.ebits) - 1u;
  if (std::isnan(v)) return sign | (exp_all << f.mbits) | ((1u << f.mbits) - 1u);
  const double a = std::fabs(static_cast<double>(v));
  const int min_exp = 1 - f.bias();
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, min_exp);
  const double quantum = std::ldexp(1.0, exp - f.mbits);
  const double r = std::nearbyint(a / quantum) * quantum;  // ties to even (default rounding mode)
  if (std::isinf(a) || r > f.max_finite()) {
    if (f.ieee) return sign | (exp_all << f.mbits);
    return sign | ((exp_all << f.mbits) | ((1u << f.mbits) - 2u));  // saturate to the largest finite
  }
  if (r == 0.0) return sign;
  std::frexp(r, &e);
  const int rexp = e - 1;
  if (rexp >= min_exp) {
    const auto mant = static_cast<uint32_t>((std::ldexp(r, -rexp) - 1.0) * (1 << f.mbits));
    return sign | (static_cast<uint32_t>(rexp + f.bias()) << f.mbits) | mant;
  }
  return sign | static_cast<uint32_t>(std::ldexp(r, f.mbits - min_exp));  // subnormal
}

float decode(const MiniFloat& f, uint32_t bits) {
  const bool neg = (bits >> (f.ebits + f.mbits)) & 1u;
  const uint32_t exp = (bits >> f.mbits) & ((1u << f.ebits) - 1u);
  const uint32_t mant = bits & ((1u << f.mbits) - 1u);
  double v;
  if (exp == (1u << f.ebits) - 1u && (f.ieee || mant == (1u << f.mbits) - 1u)) {
    v = (f.ieee && mant == 0) ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - f.bias() - f.mbits);
  } else {
    v = std::ldexp(1.0 + mant / double(1u << f.mbits), static_cast<int>(exp) - f.bias());
  }
  return static_cast<float>(neg ? -v : v);
}

template <typename T>
T saturate_round(float v) {
  if (std::isnan(v)) return T(0);
  const double r = std::nearbyint(static_cast<double>(v));
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

template <typename T>
void put(void* base, int64_t index, T v) {
  std::memcpy(static_cast<uint8_t*>(base) + index * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
template <typename T>
T get(const void* base, int64_t index) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// f32 -> bf16 bits, round to nearest even (the carry walks into the exponent, up to inf).
uint16_t bf16_bits(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// f32 -> f16 bits, round to nearest even; normals by integer rounding, the rest by encode().
uint16_t f16_bits(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t a = u & 0x7fffffffu;
  if (a < 0x38800000u || a >= 0x477ff000u) return static_cast<uint16_t>(encode(kF16, f));  // subnormal, inf, NaN
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t q = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace

void dtype_store_array(ir::DType dtype, void* base, int64_t offset, const float* src, int64_t n) {
  switch (dtype) {
    case ir::DType::F32:
      std::memcpy(static_cast<float*>(base) + offset, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case ir::DType::BF16: {
      uint16_t* dst = static_cast<uint16_t*>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits(src[i]);
      return;
    }
    case ir::DType::F16: {
      uint16_t* dst = static_cast<uint16_t*>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_bits(src[i]);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dtype_store(dtype, base, offset + i, src[i]);
      return;
  }
}

void dtype_store(ir::DType dtype, void* base, int64_t index, float v) {
  switch (dtype) {
    case ir::DType::F32: put<float>(base, index, v); return;
    case ir::DType::F16: put<uint16_t>(base, index, static_cast<uint16_t>(encode(kF16, v))); return;
    case ir::DType::BF16: put<uint16_t>(base, index, static_cast<uint16_t>(encode(kBF16, v))); return;
    case ir::DType::F8E4M3: put<uint8_t>(base, index, static_cast<uint8_t>(encode(kE4M3, v))); return;
    case ir::DType::F8E5M2: put<uint8_t>(base, index, static_cast<uint8_t>(encode(kE5M2, v))); return;
    case ir::DType::I32: put<int32_t>(base, index, saturate_round<int32_t>(v)); return;
    case ir::DType::I8: put<int8_t>(base, index, saturate_round<int8_t>(v)); return;
    case ir::DType::U8: put<uint8_t>(base, index, saturate_round<uint8_t>(v)); return;
    case ir::DType::Bool: put<uint8_t>(base, index, v != 0.0f ? 1 : 0); return;
    case ir::DType::I4: {
      int8_t q = saturate_round<int8_t>(v);
      q = q < -8 ? -8 : (q > 7 ? 7 : q);
      uint8_t& byte = static_cast<uint8_t*>(base)[index >> 1];
      const auto nib = static_cast<uint8_t>(q & 0x0f);
      byte = (index & 1) ? static_cast<uint8_t>((byte & 0x0f) | (nib << 4)) : static_cast<uint8_t>((byte & 0xf0) | nib);
      return;
    }
  }
}

float dtype_load(ir::DType dtype, const void* base, int64_t index) {
  switch (dtype) {
    case ir::DType::F32: return get<float>(base, index);
    case ir::DType::F16: return decode(kF16, get<uint16_t>(base, index));
    case ir::DType::BF16: return decode(kBF16, get<uint16_t>(base, index));
    case ir::DType::F8E4M3: return decode(kE4M3, get<uint8_t>(base, index));
    case ir::DType::F8E5M2: return decode(kE5M2, get<uint8_t>(base, index));
    case ir::DType::I32: return static_cast<float>(get<int32_t>(base, index));
    case ir::DType::I8: return static_cast<float>(get<int8_t>(base, index));
    case ir::DType::U8: return static_cast<float>(get<uint8_t>(base, index));
    case ir::DType::Bool: return get<uint8_t>(base, index) != 0 ? 1.0f : 0.0f;
    case ir::DType::I4: {
      const uint8_t byte = static_cast<const uint8_t*>(base)[index >> 1];
      const int nib = (index & 1) ? (byte >> 4) : (byte & 0x0f);
      return static_cast<float>(nib >= 8 ? nib - 16 : nib);
    }
  }
  return 0.0f;
}

}  // namespace amk::loader
