// instructions/rms_norm.h: RMSNORM (3) y = x * rsqrt(mean(x^2) + eps) * w per row of `hidden`
// elements. x is read flat as [rows, hidden] (rows = numel / hidden), so a [heads * head_dim]
// vector normalises per head when hidden = head_dim. y may be x.
#pragma once
#include <math.h>

#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded RMSNORM operands.
struct RmsNormArgs {
  Tensor x, w, y;
  int64_t rows = 0, hidden = 0;
  float eps = 0.0f;
};

/// rsqrt(sum_sq / n + eps): the scale of one row, written once for CPU and GPU.
AMK_HD float rms_inv(float sum_sq, int64_t n, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(n) + eps);
}

/// BAD_PARAMS unless hidden >= 1 divides x's numel, w has hidden elements and y matches x.
AMK_HD int32_t decode_rms_norm(const amk_program_t& p, const amk_instruction_t& inst, RmsNormArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->w));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->w));
  AMK_TRY_DEV(require_float(a->y));
  a->hidden = inst.params.hidden;
  if (a->hidden < 1 || a->x.numel % a->hidden != 0 || a->w.numel != a->hidden || a->y.numel != a->x.numel)
    return AMK_DEVERR_BAD_PARAMS;
  a->rows = a->x.numel / a->hidden;
  a->eps = inst.params.eps;
  return AMK_DEVERR_NONE;
}

/// CPU reference of RMSNORM.
int32_t rms_norm_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
