// instructions/attention_combine.h: ATTENTION_COMBINE (18) merges split-KV partials P_1..P_k, each
// [H * (hd + 2)] holding [acc[hd], m, l] per head (or [S, H * (hd + 2)]: S partials stacked in
// rows, an amk extension, merged row by row: row 0 of P_1..P_k, then row 1, ...): M = max m_p, w_p = exp(m_p - M),
// y = sum w_p acc_p / sum w_p l_p. Empty partials (m = -inf, l = 0) weigh 0; a head with no keys
// at all yields 0. head_dim / n_heads of 0 are derived from the shapes. A task may merge only the
// heads [n_off, n_off + N_tile) (N_tile 0: all; an amk extension, docs/OPCODES.md), so several
// tasks on several SMs share one combine.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded ATTENTION_COMBINE operands.
struct AttentionCombineArgs {
  Tensor parts[AMK_MAX_INPUTS];
  Tensor y;
  int32_t k = 0;     ///< partial operands
  int32_t rows = 1;  ///< partials per operand (stacked rows); partial j = row j / k of operand j % k
  int64_t head_dim = 0, n_heads = 0;
  int64_t h_begin = 0, h_end = 0;  ///< the heads this task merges
};

/// Resolve (H, hd) from the params and the shapes y = H * hd, P = H * (hd + 2). BAD_PARAMS when
/// they do not determine positive values consistent with every operand.
AMK_HD int32_t combine_shape(int64_t y_numel, int64_t p_numel, int64_t hd, int64_t heads, int64_t* hd_out,
                             int64_t* heads_out) {
  if (hd < 0 || heads < 0) return AMK_DEVERR_BAD_PARAMS;
  if (heads == 0 && hd == 0) {  // P - y = 2H
    if (p_numel <= y_numel || (p_numel - y_numel) % 2 != 0) return AMK_DEVERR_BAD_PARAMS;
    heads = (p_numel - y_numel) / 2;
  }
  if (heads == 0) {
    if (y_numel % hd != 0) return AMK_DEVERR_BAD_PARAMS;
    heads = y_numel / hd;
  }
  if (hd == 0) {
    if (heads == 0 || y_numel % heads != 0) return AMK_DEVERR_BAD_PARAMS;
    hd = y_numel / heads;
  }
  if (hd < 1 || heads < 1 || y_numel != heads * hd || p_numel != heads * (hd + 2)) return AMK_DEVERR_BAD_PARAMS;
  *hd_out = hd;
  *heads_out = heads;
  return AMK_DEVERR_NONE;
}

/// At most this many partials in all (k operands x their rows): the device's merge keeps each
/// element's partials in registers.
inline constexpr int32_t kMaxCombinePartials = 16;

/// BAD_PARAMS for 2..8 operands of inconsistent shape, more than kMaxCombinePartials partials
/// or a head range outside [0, n_heads); BAD_DTYPE for non-float operands. An operand of rank 2
/// stacks shape[0] partials (rows); every operand has the same shape.
AMK_HD int32_t decode_attention_combine(const amk_program_t& p, const amk_instruction_t& inst,
                                        AttentionCombineArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, AMK_MAX_INPUTS, 1));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->y));
  a->k = inst.n_inputs;
  for (int32_t i = 0; i < a->k; ++i) {
    AMK_TRY_DEV(bind_input(p, inst, i, &a->parts[i]));
    AMK_TRY_DEV(require_float(a->parts[i]));
    if (a->parts[i].numel != a->parts[0].numel || stacked_rows(a->parts[i]) != stacked_rows(a->parts[0]))
      return AMK_DEVERR_BAD_PARAMS;
  }
  const int64_t rows = stacked_rows(a->parts[0]);
  if (rows < 1 || rows * a->k > kMaxCombinePartials) return AMK_DEVERR_BAD_PARAMS;
  a->rows = static_cast<int32_t>(rows);
  AMK_TRY_DEV(combine_shape(a->y.numel, a->parts[0].numel / rows, inst.params.head_dim, inst.params.n_heads,
                            &a->head_dim, &a->n_heads));
  return decode_head_range(inst.params, a->n_heads, &a->h_begin, &a->h_end);
}

/// CPU reference of ATTENTION_COMBINE.
int32_t attention_combine_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
