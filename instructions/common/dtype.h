// instructions/common/dtype.h: scalar dtype conversions and typed element load/store by amk_dtype_t.
// Every conversion to a narrow float is round-to-nearest-even and done once per output element
// (DESIGN.md numerics). Integer arithmetic only, so the result does not depend on the FP mode.
// Element offsets are in elements; I4 packs two per byte, low nibble first, signed.
#pragma once
#include <stdint.h>
#include <string.h>

#include "instructions/common/hd.h"
#include "vm/abi.h"

namespace amk::instructions {

/// The bits of a float, and back (memcpy: the portable, alias-safe bit cast).
AMK_HD uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
AMK_HD float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/// bf16 -> f32 is exact: the bf16 bits are the top half of the f32.
AMK_HD float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

/// f32 -> bf16, round-to-nearest-even; NaN stays NaN (quiet bit forced, sign and top payload kept).
AMK_HD uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);  // carries into the exponent, up to inf, exactly as RNE wants
  return static_cast<uint16_t>(u >> 16);
}

/// f16 -> f32, exact for normals, subnormals, inf and NaN, and independent of the FP mode (no
/// subnormal float is ever formed, so flush-to-zero cannot bite). Normals and inf/NaN rebias the
/// exponent with integer adds; subnormals m * 2^-24 come from (0.5 + m * 2^-24) - 0.5. The choice
/// is made with masks, not branches, so a loop over it auto-vectorises.
AMK_HD float f16_to_f32(uint16_t h) {
  const int32_t em = h & 0x7fff;
  const uint32_t is_sub = 0u - static_cast<uint32_t>(em < 0x400);
  const uint32_t is_inf_nan = 0u - static_cast<uint32_t>(em > 0x7bff);
  const uint32_t normal = (static_cast<uint32_t>(em) << 13) + (112u << 23) + ((112u << 23) & is_inf_nan);
  const uint32_t sub = f32_bits(f32_from_bits(static_cast<uint32_t>(em) | (126u << 23)) - 0.5f);
  return f32_from_bits((static_cast<uint32_t>(h & 0x8000u) << 16) | (sub & is_sub) | (normal & ~is_sub));
}

/// f32 -> f16, round-to-nearest-even, with overflow to inf, gradual underflow to subnormals and
/// NaN kept NaN (quiet bit forced, top payload bits kept).
AMK_HD uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x0200u | ((a >> 13) & 0x3ffu) : 0u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  uint32_t q, rem, half;
  if (a >= 0x38800000u) {  // normal f16: keep 10 mantissa bits, rebias 127 -> 15
    q = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
    rem = a & 0x1fffu;
    half = 0x1000u;
  } else {  // subnormal f16 (units of 2^-24): m * 2^(e-126) with the implicit bit restored
    const uint32_t e = a >> 23;
    if (e < 102u) return sign;  // below 2^-25: rounds to zero
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24
    q = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
  }
  if (rem > half || (rem == half && (q & 1u))) ++q;  // a carry walks into the exponent correctly
  return static_cast<uint16_t>(sign | q);
}

/// `v` as a buffer of float dtype `d` would hold it (the rounding of a store and a load).
AMK_HD float round_to_dtype(int32_t d, float v) {
  if (d == AMK_DTYPE_BF16) return bf16_to_f32(f32_to_bf16(v));
  if (d == AMK_DTYPE_F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

/// F32, F16, BF16: the dtypes activations and weights may have.
AMK_HD bool dtype_is_float(int32_t d) { return d == AMK_DTYPE_F32 || d == AMK_DTYPE_F16 || d == AMK_DTYPE_BF16; }
/// Dtypes load_elem() reads as a number (floats and the integer types; not F8, not BOOL).
AMK_HD bool dtype_is_loadable(int32_t d) {
  return dtype_is_float(d) || d == AMK_DTYPE_I32 || d == AMK_DTYPE_I8 || d == AMK_DTYPE_I4 || d == AMK_DTYPE_U8;
}

/// Sign-extended 4-bit value at element offset `off` of a packed I4 array (low nibble first).
AMK_HD int32_t i4_load(const void* p, int64_t off) {
  const uint8_t byte = static_cast<const uint8_t*>(p)[off >> 1];
  const int32_t nib = (off & 1) ? (byte >> 4) : (byte & 0x0f);
  return nib >= 8 ? nib - 16 : nib;
}

/// Element `off` of `p` (dtype `d`) as a float. Callers check dtype_is_loadable() first.
/// An if-chain with the float types first, not a switch: on the GPU a switch becomes an indirect
/// branch through a jump table (BRX) in every element loop, and in the persistent kernel's large
/// code image each one costs an instruction fetch; compare-and-branch stays on the fetched path.
AMK_HD float load_elem(const void* p, int32_t d, int64_t off) {
  if (d == AMK_DTYPE_BF16) return bf16_to_f32(static_cast<const uint16_t*>(p)[off]);
  if (d == AMK_DTYPE_F32) return static_cast<const float*>(p)[off];
  if (d == AMK_DTYPE_F16) return f16_to_f32(static_cast<const uint16_t*>(p)[off]);
  if (d == AMK_DTYPE_I32) return static_cast<float>(static_cast<const int32_t*>(p)[off]);
  if (d == AMK_DTYPE_I8) return static_cast<float>(static_cast<const int8_t*>(p)[off]);
  if (d == AMK_DTYPE_U8) return static_cast<float>(static_cast<const uint8_t*>(p)[off]);
  if (d == AMK_DTYPE_I4) return static_cast<float>(i4_load(p, off));
  return 0.0f;
}

/// Store `v` at element `off` of float buffer `p`, cast once to `d` (F32, F16 or BF16); an
/// if-chain for the reason given at load_elem().
AMK_HD void store_elem(void* p, int32_t d, int64_t off, float v) {
  if (d == AMK_DTYPE_BF16) static_cast<uint16_t*>(p)[off] = f32_to_bf16(v);
  else if (d == AMK_DTYPE_F32) static_cast<float*>(p)[off] = v;
  else if (d == AMK_DTYPE_F16) static_cast<uint16_t*>(p)[off] = f32_to_f16(v);
}

/// Size in bits of one element (4 for I4); 0 for an unknown dtype.
AMK_HD int32_t dtype_bits(int32_t d) {
  switch (d) {
    case AMK_DTYPE_F32: case AMK_DTYPE_I32: return 32;
    case AMK_DTYPE_F16: case AMK_DTYPE_BF16: return 16;
    case AMK_DTYPE_F8E4M3: case AMK_DTYPE_F8E5M2: case AMK_DTYPE_I8: case AMK_DTYPE_U8: case AMK_DTYPE_BOOL: return 8;
    case AMK_DTYPE_I4: return 4;
    default: return 0;
  }
}

}  // namespace amk::instructions
