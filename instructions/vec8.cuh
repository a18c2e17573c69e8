// instructions/vec8.cuh: reading 8 consecutive elements of a float tensor with one 16-byte load
// (bf16 / f16) or two (f32). The GEMV prologue stages up to K activations per task; element by
// element through Tensor::load that is a chain of K / threads dependent round trips to memory,
// 8 at a time it is one or two. vec8_ok() says when the fast form reads exactly the same values.
#pragma once
#include "instructions/device_common.cuh"

namespace amk::instructions {

/// Whether elements [i, i + n) of `t` may be read with load8(): contiguous, a float dtype, n a
/// multiple of 8 and element i 16-byte aligned. Uniform across the block for uniform arguments.
AMK_DEVICE bool vec8_ok(const Tensor& t, int64_t i, int64_t n) {
#ifdef AMK_NO_VEC8
  return false;  // A/B measurements and bisection: every caller takes its scalar path
#endif  // AMK_NO_VEC8
  if (!t.contiguous || n % 8 != 0) return false;
  int64_t esize = 0;
  if (t.dtype == AMK_DTYPE_BF16 || t.dtype == AMK_DTYPE_F16) esize = 2;
  else if (t.dtype == AMK_DTYPE_F32) esize = 4;
  else return false;
  return (reinterpret_cast<uintptr_t>(static_cast<const char*>(t.ptr) + i * esize) & 15u) == 0;
}

/// Elements [i, i + 8) of `t` as floats (the conversions of load_elem). Requires vec8_ok(t, i, 8).
AMK_DEVICE void load8(const Tensor& t, int64_t i, float (&v)[8]) {
  if (t.dtype == AMK_DTYPE_F32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(t.ptr) + i);
    const float4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    return;
  }
  const uint4 w = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(t.ptr) + i);
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint16_t lo = static_cast<uint16_t>(u[j] & 0xffffu), hi = static_cast<uint16_t>(u[j] >> 16);
    if (t.dtype == AMK_DTYPE_BF16) {
      v[2 * j] = bf16_to_f32(lo);
      v[2 * j + 1] = bf16_to_f32(hi);
    } else {
      v[2 * j] = f16_to_f32(lo);
      v[2 * j + 1] = f16_to_f32(hi);
    }
  }
}

}  // namespace amk::instructions
