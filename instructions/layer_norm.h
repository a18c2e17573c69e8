// instructions/layer_norm.h: LAYERNORM (4) y = (x - mean) * rsqrt(var + eps) * w (+ b) per row of
// `hidden` elements, with the biased variance (divide by hidden). Rows as in RMSNORM; y may be x.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded LAYERNORM operands (b only when has_bias).
struct LayerNormArgs {
  Tensor x, w, b, y;
  bool has_bias = false;
  int64_t rows = 0, hidden = 0;
  float eps = 0.0f;
};

/// BAD_PARAMS unless hidden >= 1 divides x's numel, w (and b) have hidden elements, y matches x.
AMK_HD int32_t decode_layer_norm(const amk_program_t& p, const amk_instruction_t& inst, LayerNormArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 3, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->w));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  a->has_bias = inst.n_inputs == 3;
  if (a->has_bias) AMK_TRY_DEV(bind_input(p, inst, 2, &a->b));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->w));
  AMK_TRY_DEV(require_float(a->y));
  if (a->has_bias) AMK_TRY_DEV(require_float(a->b));
  a->hidden = inst.params.hidden;
  if (a->hidden < 1 || a->x.numel % a->hidden != 0 || a->w.numel != a->hidden || a->y.numel != a->x.numel)
    return AMK_DEVERR_BAD_PARAMS;
  if (a->has_bias && a->b.numel != a->hidden) return AMK_DEVERR_BAD_PARAMS;
  a->rows = a->x.numel / a->hidden;
  a->eps = inst.params.eps;
  return AMK_DEVERR_NONE;
}

/// CPU reference of LAYERNORM.
int32_t layer_norm_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
