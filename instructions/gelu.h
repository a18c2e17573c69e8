// instructions/gelu.h: GELU (10) y = 0.5 x (1 + erf(x / sqrt 2)), the exact (erf) form, elementwise.
// y may be x.
#pragma once
#include <math.h>

#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded GELU operands.
struct GeluArgs {
  Tensor x, y;
};

/// Exact GELU of one value.
AMK_HD float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

/// BAD_PARAMS unless x and y have the same numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_gelu(const amk_program_t& p, const amk_instruction_t& inst, GeluArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 1, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->y));
  return a->y.numel == a->x.numel ? AMK_DEVERR_NONE : AMK_DEVERR_BAD_PARAMS;
}

/// CPU reference of GELU.
int32_t gelu_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
