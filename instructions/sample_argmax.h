// instructions/sample_argmax.h: SAMPLE_ARGMAX (17) token = index of the largest logit (flat over
// the logits' numel). Ties go to the lowest index; NaN never wins (all-NaN logits give token 0, so
// the token is always a valid id). The output is one I32.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded SAMPLE_ARGMAX operands.
struct SampleArgmaxArgs {
  Tensor logits, token;
};

/// BAD_PARAMS unless there are 1..INT32_MAX logits and one output element; BAD_DTYPE unless the
/// logits are float and the token I32.
AMK_HD int32_t decode_sample_argmax(const amk_program_t& p, const amk_instruction_t& inst, SampleArgmaxArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 1, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->logits));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->token));
  AMK_TRY_DEV(require_float(a->logits));
  if (a->token.dtype != AMK_DTYPE_I32) return AMK_DEVERR_BAD_DTYPE;
  if (a->logits.numel < 1 || a->logits.numel > INT32_MAX || a->token.numel != 1) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// The better of two (value, index) candidates: larger value, then lower index; NaN loses.
/// Associative and commutative, so a GPU tree reduction picks the same token as a scan.
AMK_HD bool argmax_better(float v, int64_t i, float best_v, int64_t best_i) {
  if (v != v) return false;
  if (best_v != best_v) return true;
  return v > best_v || (v == best_v && i < best_i);
}

/// CPU reference of SAMPLE_ARGMAX.
int32_t sample_argmax_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
