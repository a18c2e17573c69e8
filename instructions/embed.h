// instructions/embed.h: EMBED (2) y[m, :] = table[ids[m], :]. ids are I32 (any shape, M elements),
// table is [V, H] with H = hidden (its last dimension), y holds M * H elements. An id outside [0, V)
// is INDEX_OUT_OF_RANGE, detected before anything is written.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded EMBED operands.
struct EmbedArgs {
  Tensor ids, table, y;
  int64_t vocab = 0, hidden = 0;
};

/// BAD_PARAMS unless hidden >= 1 is the table's last dimension and y holds M * hidden elements;
/// BAD_DTYPE unless ids are I32 and table / y are float.
AMK_HD int32_t decode_embed(const amk_program_t& p, const amk_instruction_t& inst, EmbedArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->ids));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->table));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  if (a->ids.dtype != AMK_DTYPE_I32) return AMK_DEVERR_BAD_DTYPE;
  AMK_TRY_DEV(require_float(a->table));
  AMK_TRY_DEV(require_float(a->y));
  a->hidden = inst.params.hidden;
  if (a->hidden < 1 || a->table.cols() != a->hidden) return AMK_DEVERR_BAD_PARAMS;
  a->vocab = a->table.numel / a->hidden;
  if (a->y.numel != a->ids.numel * a->hidden) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// Id m of a decoded EMBED.
AMK_HD int32_t embed_id(const EmbedArgs& a, int64_t m) {
  return static_cast<const int32_t*>(a.ids.ptr)[a.ids.offset(m)];
}

/// CPU reference of EMBED.
int32_t embed_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
