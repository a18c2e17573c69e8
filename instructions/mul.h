// instructions/mul.h: MUL (12) y = a * b elementwise over equal numel, or y = a * scale with one
// input. With two inputs `scale` is ignored (an absent real param reads as 0 in the ABI, so
// applying it would zero the product). y may be a or b.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded MUL operands (b only when has_b).
struct MulArgs {
  Tensor a, b, y;
  bool has_b = false;
  float scale = 0.0f;
};

/// BAD_PARAMS unless the operands have the same numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_mul(const amk_program_t& p, const amk_instruction_t& inst, MulArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->a));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->a));
  AMK_TRY_DEV(require_float(a->y));
  a->has_b = inst.n_inputs == 2;
  if (a->has_b) {
    AMK_TRY_DEV(bind_input(p, inst, 1, &a->b));
    AMK_TRY_DEV(require_float(a->b));
    if (a->b.numel != a->a.numel) return AMK_DEVERR_BAD_PARAMS;
  }
  if (a->y.numel != a->a.numel) return AMK_DEVERR_BAD_PARAMS;
  a->scale = inst.params.scale;
  return AMK_DEVERR_NONE;
}

/// CPU reference of MUL.
int32_t mul_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
