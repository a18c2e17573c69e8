// instructions/rope_append.h: FUSED recipe ROPE_APPEND (5), [x, inv_freq, cache] -> cache:
// cache[pos, :] = rope(x, pos), i.e. ROPE (rotate-half per head of x [n * hd]) followed by
// KV_APPEND of the rotated row, as one task. It takes the key's rotation and its append out of
// two dependent stages of a decoder layer (docs/SCHEDULE.md, fusion group ["rope", "kv_append"]).
// The output is the cache (validate() insists it is input 2); pos follows the step under STEP_POS
// and must be a row of the cache, else INDEX_OUT_OF_RANGE.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded ROPE_APPEND operands.
struct RopeAppendArgs {
  Tensor x, inv_freq, cache;  ///< cache is the output buffer
  int64_t head_dim = 0, half = 0, row = 0, seq = 0, pos = 0;
};

/// BAD_PARAMS unless the recipe's arity holds, head_dim is even and >= 2 and divides x's numel,
/// inv_freq has head_dim / 2 elements and the cache splits into rows of x's numel (input 2 being
/// the output's numel); BAD_DTYPE for non-float operands.
/// Everything but the step position (decode_rope_append = this + bind_rope_append_step).
AMK_HD int32_t decode_rope_append_static(const amk_program_t& p, const amk_instruction_t& inst, RopeAppendArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 3, 3, 1));
  Tensor cache_in;
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->inv_freq));
  AMK_TRY_DEV(bind_input(p, inst, 2, &cache_in));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->cache));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->inv_freq));
  AMK_TRY_DEV(require_float(a->cache));
  a->head_dim = inst.params.head_dim;
  a->half = a->head_dim / 2;
  a->row = a->x.numel;
  if (a->head_dim < 2 || a->head_dim % 2 != 0 || a->row < 1 || a->row % a->head_dim != 0 ||
      a->inv_freq.numel != a->half || a->cache.numel % a->row != 0 || cache_in.numel != a->cache.numel)
    return AMK_DEVERR_BAD_PARAMS;
  a->seq = a->cache.numel / a->row;
  return AMK_DEVERR_NONE;
}

/// The step-dependent part: the position, which is both the rotation angle's and the cache row.
AMK_HD int32_t bind_rope_append_step(const amk_program_t& p, const amk_instruction_t& inst, RopeAppendArgs* a) {
  a->pos = effective_pos(p, inst);
  return a->pos < 0 || a->pos >= a->seq ? AMK_DEVERR_INDEX_OUT_OF_RANGE : AMK_DEVERR_NONE;
}

AMK_HD int32_t decode_rope_append(const amk_program_t& p, const amk_instruction_t& inst, RopeAppendArgs* a) {
  AMK_TRY_DEV(decode_rope_append_static(p, inst, a));
  return bind_rope_append_step(p, inst, a);
}

/// CPU reference of FUSED ROPE_APPEND.
int32_t rope_append_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
