// instructions/rope.h: ROPE (8) rotate-half rotary embedding per head of x [n * hd]: for i < hd/2,
// a = pos * inv_freq[i]; y[i] = x[i] cos a - x[i + hd/2] sin a; y[i + hd/2] = x[i + hd/2] cos a +
// x[i] sin a. inv_freq is a CONST [hd/2] table, so theta only documents how it was made. pos
// follows the step under STEP_POS; a negative effective pos is INDEX_OUT_OF_RANGE. y may be x.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded ROPE operands.
struct RopeArgs {
  Tensor x, inv_freq, y;
  int64_t head_dim = 0, heads = 0, pos = 0;
};

/// BAD_PARAMS unless head_dim is even and >= 2, divides x's numel, inv_freq has head_dim / 2
/// elements and y matches x.
/// Everything but the step position (decode_rope = this + bind_rope_step).
AMK_HD int32_t decode_rope_static(const amk_program_t& p, const amk_instruction_t& inst, RopeArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->inv_freq));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->inv_freq));
  AMK_TRY_DEV(require_float(a->y));
  a->head_dim = inst.params.head_dim;
  if (a->head_dim < 2 || a->head_dim % 2 != 0 || a->x.numel % a->head_dim != 0 ||
      a->inv_freq.numel != a->head_dim / 2 || a->y.numel != a->x.numel)
    return AMK_DEVERR_BAD_PARAMS;
  a->heads = a->x.numel / a->head_dim;
  return AMK_DEVERR_NONE;
}

/// The step-dependent part: the rotation position.
AMK_HD int32_t bind_rope_step(const amk_program_t& p, const amk_instruction_t& inst, RopeArgs* a) {
  a->pos = effective_pos(p, inst);
  return a->pos < 0 ? AMK_DEVERR_INDEX_OUT_OF_RANGE : AMK_DEVERR_NONE;
}

AMK_HD int32_t decode_rope(const amk_program_t& p, const amk_instruction_t& inst, RopeArgs* a) {
  AMK_TRY_DEV(decode_rope_static(p, inst, a));
  return bind_rope_step(p, inst, a);
}

/// CPU reference of ROPE.
int32_t rope_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
