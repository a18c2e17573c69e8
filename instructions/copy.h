// instructions/copy.h: COPY (1) y[i] = x[i] over equal numel, cast to y's dtype. Same-dtype copies
// move the element bits (any dtype, I4 nibbles included, NaN payloads kept); otherwise x must be
// numeric and y a float dtype. y may be x itself.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded COPY operands.
struct CopyArgs {
  Tensor x, y;
  bool raw = false;  ///< same dtype: copy bits, no conversion
};

/// BAD_PARAMS unless x and y have the same numel; BAD_DTYPE for an impossible conversion.
AMK_HD int32_t decode_copy(const amk_program_t& p, const amk_instruction_t& inst, CopyArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 1, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  if (a->x.numel != a->y.numel) return AMK_DEVERR_BAD_PARAMS;
  a->raw = a->x.dtype == a->y.dtype;
  if (!a->raw && (!dtype_is_loadable(a->x.dtype) || !dtype_is_float(a->y.dtype))) return AMK_DEVERR_BAD_DTYPE;
  return AMK_DEVERR_NONE;
}

/// CPU reference of COPY.
int32_t copy_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
