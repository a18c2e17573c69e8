// instructions/common/matmul_ref.h: the CPU inner loops of every GEMV-like op. The weight stream
// is what costs (decode is bandwidth-bound), so a row of W that is contiguous in memory goes
// through a per-dtype loop the compiler auto-vectorises; any other layout takes a generic path.
#pragma once
#include <stdint.h>

#include "instructions/common/tensor.h"

namespace amk::instructions {

/// xf[k] = x[r * K + k] as fp32, for k < K.
void stage_row_f32(const Tensor& x, int64_t r, int64_t K, float* xf);

/// out[n - n_begin] = sum_k xf[k] * W[n * K + k] for n in [n_begin, n_end), accumulated in fp32.
void matmul_row_dots(const float* xf, const Tensor& w, int64_t K, int64_t n_begin, int64_t n_end, float* out);

/// fp32 dot product of xf[K] with a contiguous row of dtype `dtype` (F32, F16 or BF16).
float dot_row_contiguous(const float* xf, const void* row, int32_t dtype, int64_t K);

}  // namespace amk::instructions
