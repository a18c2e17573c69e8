// instructions/dequant.h: DEQUANT (13) y[n, k] = (q[n, k] - zero[n, k / group]) * scale[n, k / group].
// q is [N, K] I8, or I4 packed two per byte (low nibble first, signed, element offsets in nibbles);
// qdtype must name q's dtype. scales / zeros are [N, ceil(K / group)]; zeros may be float or int.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded DEQUANT operands (zeros only when has_zeros).
struct DequantArgs {
  Tensor q, scales, zeros, y;
  bool has_zeros = false;
  int64_t rows = 0, cols = 0, group = 0, groups = 0;  ///< N, K, group, ceil(K / group)
};

/// BAD_DTYPE unless q is I8 / I4 and equals qdtype, scales and y are float and zeros numeric;
/// BAD_PARAMS unless group >= 1, scales (and zeros) are [N, ceil(K / group)] and y is [N, K].
AMK_HD int32_t decode_dequant(const amk_program_t& p, const amk_instruction_t& inst, DequantArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 3, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->q));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->scales));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  a->has_zeros = inst.n_inputs == 3;
  if (a->has_zeros) AMK_TRY_DEV(bind_input(p, inst, 2, &a->zeros));
  if ((a->q.dtype != AMK_DTYPE_I8 && a->q.dtype != AMK_DTYPE_I4) || inst.params.qdtype != a->q.dtype)
    return AMK_DEVERR_BAD_DTYPE;
  AMK_TRY_DEV(require_float(a->scales));
  AMK_TRY_DEV(require_float(a->y));
  if (a->has_zeros && !dtype_is_loadable(a->zeros.dtype)) return AMK_DEVERR_BAD_DTYPE;
  a->group = inst.params.group;
  a->cols = a->q.cols();
  if (a->group < 1 || a->cols < 1) return AMK_DEVERR_BAD_PARAMS;
  a->rows = a->q.numel / a->cols;
  a->groups = (a->cols + a->group - 1) / a->group;
  if (a->scales.numel != a->rows * a->groups || a->y.numel != a->q.numel) return AMK_DEVERR_BAD_PARAMS;
  if (a->has_zeros && a->zeros.numel != a->scales.numel) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// CPU reference of DEQUANT.
int32_t dequant_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
