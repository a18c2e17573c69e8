// instructions/kv_append.h: KV_APPEND (16) cache[pos, :] = new, where a cache row has new's numel
// (n_kv * hd) and S = cache numel / row. The output is the cache (validate() insists it is input
// 1); pos follows the step under STEP_POS and must lie in [0, S), else INDEX_OUT_OF_RANGE.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded KV_APPEND operands.
struct KvAppendArgs {
  Tensor src, cache;  ///< cache is the output buffer
  int64_t row = 0, seq = 0, pos = 0;
};

/// BAD_PARAMS unless new is non-empty, the output splits into rows of new's numel and input 1
/// has the output's numel; BAD_DTYPE for non-float operands.
/// Everything but the step position (decode_kv_append = this + bind_kv_append_step).
AMK_HD int32_t decode_kv_append_static(const amk_program_t& p, const amk_instruction_t& inst, KvAppendArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  Tensor cache_in;
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->src));
  AMK_TRY_DEV(bind_input(p, inst, 1, &cache_in));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->cache));
  AMK_TRY_DEV(require_float(a->src));
  AMK_TRY_DEV(require_float(a->cache));
  a->row = a->src.numel;
  if (a->row < 1 || a->cache.numel % a->row != 0 || cache_in.numel != a->cache.numel) return AMK_DEVERR_BAD_PARAMS;
  a->seq = a->cache.numel / a->row;
  return AMK_DEVERR_NONE;
}

/// The step-dependent part: the cache row written.
AMK_HD int32_t bind_kv_append_step(const amk_program_t& p, const amk_instruction_t& inst, KvAppendArgs* a) {
  a->pos = effective_pos(p, inst);
  return a->pos < 0 || a->pos >= a->seq ? AMK_DEVERR_INDEX_OUT_OF_RANGE : AMK_DEVERR_NONE;
}

AMK_HD int32_t decode_kv_append(const amk_program_t& p, const amk_instruction_t& inst, KvAppendArgs* a) {
  AMK_TRY_DEV(decode_kv_append_static(p, inst, a));
  return bind_kv_append_step(p, inst, a);
}

/// CPU reference of KV_APPEND.
int32_t kv_append_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
