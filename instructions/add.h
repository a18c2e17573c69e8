// instructions/add.h: ADD (11) y = a + b elementwise over equal numel (no broadcasting): the
// residual add. y may be a or b (in-place residual update).
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded ADD operands.
struct AddArgs {
  Tensor a, b, y;
};

/// BAD_PARAMS unless a, b and y have the same numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_add(const amk_program_t& p, const amk_instruction_t& inst, AddArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->a));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->b));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->a));
  AMK_TRY_DEV(require_float(a->b));
  AMK_TRY_DEV(require_float(a->y));
  if (a->b.numel != a->a.numel || a->y.numel != a->a.numel) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// CPU reference of ADD.
int32_t add_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
