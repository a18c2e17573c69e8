// instructions/softmax.h: SOFTMAX (14) over the last dimension of x ([rows, cols] matrix view),
// max-subtracted. A row whose max is -inf (fully masked) becomes all zeros rather than NaN. y may
// be x.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded SOFTMAX operands.
struct SoftmaxArgs {
  Tensor x, y;
  int64_t rows = 0, cols = 0;
};

/// BAD_PARAMS unless y has x's numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_softmax(const amk_program_t& p, const amk_instruction_t& inst, SoftmaxArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 1, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->y));
  if (a->y.numel != a->x.numel) return AMK_DEVERR_BAD_PARAMS;
  a->cols = a->x.cols();
  a->rows = a->cols > 0 ? a->x.numel / a->cols : 0;
  return AMK_DEVERR_NONE;
}

/// CPU reference of SOFTMAX.
int32_t softmax_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
