// instructions/common/matmul.h: the tile geometry GEMV_TILE, GEMM_TILE and the FUSED GEMV recipes
// share: y[r, n] = x[r, :] . W[n, :] for rows [m_begin, m_end) and columns [n_begin, n_end).
// W must be a [n_out, K] weight (its last dimension is K); x and y are read flat as [rows, K] and
// [rows, n_out], so an x shaped [K], [1, K] or [heads, head_dim] with K = heads * head_dim all work.
#pragma once
#include <stdint.h>

#include "instructions/common/tensor.h"

namespace amk::instructions {

/// A checked matmul tile.
struct MatmulArgs {
  Tensor x, w, y;
  int64_t K = 0, rows = 0, n_out = 0;
  int64_t n_begin = 0, n_end = 0;  ///< output columns of the tile
  int64_t m_begin = 0, m_end = 0;  ///< rows of the tile (all rows for GEMV)
};

/// Fill `a` from bound tensors and the K / n_off / N_tile params; the row tile defaults to all
/// rows. BAD_PARAMS when K < 1, x or W do not split into rows of K, y is not [rows, n_out], or the
/// column tile leaves [0, n_out); BAD_DTYPE unless x, W and y are F32/F16/BF16.
AMK_HD int32_t matmul_bind(const Tensor& x, const Tensor& w, const Tensor& y, int32_t K, int32_t n_off,
                           int32_t n_tile, MatmulArgs* a) {
  AMK_TRY_DEV(require_float(x));
  AMK_TRY_DEV(require_float(w));
  AMK_TRY_DEV(require_float(y));
  if (K < 1 || x.numel % K != 0 || w.cols() != K || w.numel % K != 0) return AMK_DEVERR_BAD_PARAMS;
  a->x = x;
  a->w = w;
  a->y = y;
  a->K = K;
  a->rows = x.numel / K;
  a->n_out = w.numel / K;
  if (y.numel != a->rows * a->n_out) return AMK_DEVERR_BAD_PARAMS;
  if (n_off < 0 || n_tile < 1 || static_cast<int64_t>(n_off) + n_tile > a->n_out) return AMK_DEVERR_BAD_PARAMS;
  a->n_begin = n_off;
  a->n_end = static_cast<int64_t>(n_off) + n_tile;
  a->m_begin = 0;
  a->m_end = a->rows;
  return AMK_DEVERR_NONE;
}

/// BAD_PARAMS unless `t` is a float vector of `rows * n_out` elements (bias: rows == 1) usable as
/// a per-output addend.
AMK_HD int32_t matmul_check_addend(const Tensor& t, int64_t numel) {
  AMK_TRY_DEV(require_float(t));
  return t.numel == numel ? AMK_DEVERR_NONE : AMK_DEVERR_BAD_PARAMS;
}

}  // namespace amk::instructions
