// instructions/common/matmul_ref.cpp: fp32-accumulating dot products over weight rows.
// The contiguous loops keep kLanes independent accumulators so that (a) the compiler can vectorise
// the body without reassociating (it never may, without -ffast-math) and (b) the summation error
// grows with K / kLanes rather than K. Weights are widened to fp32 exactly before the multiply.
// The lane loop is fully unrolled on purpose: only then does GCC at -O2 keep the accumulators in
// vector registers (otherwise they round-trip through the stack every 16 weights, ~2x slower).
#include "instructions/common/matmul_ref.h"

#include <cstring>

#if defined(__clang__)
#define AMK_UNROLL_LANES _Pragma("unroll")
#elif defined(__GNUC__)
#define AMK_UNROLL_LANES _Pragma("GCC unroll 16")
#else
#define AMK_UNROLL_LANES
#endif

namespace amk::instructions {
namespace {

constexpr int kLanes = 16;

// Pairwise sum of the lane accumulators, then the scalar tail.
inline float lanes_total(const float* acc, float tail) {
  float s[kLanes / 2];
  for (int j = 0; j < kLanes / 2; ++j) s[j] = acc[j] + acc[j + kLanes / 2];
  for (int w = kLanes / 4; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  return s[0] + tail;
}

float dot_f32(const float* x, const float* w, int64_t K) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    AMK_UNROLL_LANES
    for (int j = 0; j < kLanes; ++j) acc[j] += x[k + j] * w[k + j];
  }
  float tail = 0.0f;
  for (; k < K; ++k) tail += x[k] * w[k];
  return lanes_total(acc, tail);
}

float dot_bf16(const float* x, const uint16_t* w, int64_t K) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    AMK_UNROLL_LANES
    for (int j = 0; j < kLanes; ++j) acc[j] += x[k + j] * bf16_to_f32(w[k + j]);
  }
  float tail = 0.0f;
  for (; k < K; ++k) tail += x[k] * bf16_to_f32(w[k]);
  return lanes_total(acc, tail);
}

float dot_f16(const float* x, const uint16_t* w, int64_t K) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    AMK_UNROLL_LANES
    for (int j = 0; j < kLanes; ++j) acc[j] += x[k + j] * f16_to_f32(w[k + j]);
  }
  float tail = 0.0f;
  for (; k < K; ++k) tail += x[k] * f16_to_f32(w[k]);
  return lanes_total(acc, tail);
}

// Any layout: same lane structure, one element at a time through the strided view.
float dot_generic(const float* x, const Tensor& w, int64_t base, int64_t K) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    AMK_UNROLL_LANES
    for (int j = 0; j < kLanes; ++j) acc[j] += x[k + j] * w.load(base + k + j);
  }
  float tail = 0.0f;
  for (; k < K; ++k) tail += x[k] * w.load(base + k);
  return lanes_total(acc, tail);
}

}  // namespace

void stage_row_f32(const Tensor& x, int64_t r, int64_t K, float* xf) {
  const int64_t base = r * K;
  if (x.dtype == AMK_DTYPE_F32 && x.run_is_contiguous(base, K)) {
    std::memcpy(xf, static_cast<const float*>(x.ptr) + x.offset(base), static_cast<size_t>(K) * sizeof(float));
    return;
  }
  for (int64_t k = 0; k < K; ++k) xf[k] = x.load(base + k);
}

float dot_row_contiguous(const float* xf, const void* row, int32_t dtype, int64_t K) {
  switch (dtype) {
    case AMK_DTYPE_F32: return dot_f32(xf, static_cast<const float*>(row), K);
    case AMK_DTYPE_BF16: return dot_bf16(xf, static_cast<const uint16_t*>(row), K);
    case AMK_DTYPE_F16: return dot_f16(xf, static_cast<const uint16_t*>(row), K);
    default: return 0.0f;
  }
}

void matmul_row_dots(const float* xf, const Tensor& w, int64_t K, int64_t n_begin, int64_t n_end, float* out) {
  const int64_t esize = dtype_bits(w.dtype) / 8;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t base = n * K;
    if (w.run_is_contiguous(base, K)) {
      const char* row = static_cast<const char*>(w.ptr) + w.offset(base) * esize;
      out[n - n_begin] = dot_row_contiguous(xf, row, w.dtype, K);
    } else {
      out[n - n_begin] = dot_generic(xf, w, base, K);
    }
  }
}

}  // namespace amk::instructions
