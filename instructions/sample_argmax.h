// instructions/sample_argmax.h: SAMPLE_ARGMAX (17) token = index of the largest logit (flat over
// the logits' numel). Ties go to the lowest index; NaN never wins (all-NaN logits give token 0, so
// the token is always a valid id). The output is one I32.
//
// Two amk extensions split the scan over SMs (docs/OPCODES.md): a *tile* (params N_tile >= 1,
// n_off, m_off) scans logits [n_off, n_off + N_tile) and writes the index it picks into element
// m_off of an I32 candidates buffer; a *combine* (inputs logits and candidates) picks the best of
// logits[candidates[c]]. The rule is associative, so tiles covering the logits and one combine
// pick the token one whole scan picks.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Which form of SAMPLE_ARGMAX a task is.
enum class ArgmaxForm : int32_t { kWhole = 0, kTile = 1, kCombine = 2 };

/// Decoded SAMPLE_ARGMAX operands.
struct SampleArgmaxArgs {
  Tensor logits, candidates, out;  ///< candidates: kCombine only; out: the token, or a tile's candidates
  ArgmaxForm form = ArgmaxForm::kWhole;
  int64_t begin = 0, end = 0;  ///< the logits scanned: all for kWhole, the tile for kTile
  int64_t slot = 0;            ///< kTile: the element of `out` written
};

/// BAD_PARAMS unless there are 1..INT32_MAX logits, the tile lies inside them, a tile's slot
/// inside its output and otherwise the output is one element (a combine also takes no tile and
/// at least one candidate); BAD_DTYPE unless the logits are float and the output and candidates
/// I32.
AMK_HD int32_t decode_sample_argmax(const amk_program_t& p, const amk_instruction_t& inst, SampleArgmaxArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->logits));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->out));
  AMK_TRY_DEV(require_float(a->logits));
  if (a->out.dtype != AMK_DTYPE_I32) return AMK_DEVERR_BAD_DTYPE;
  const int64_t n = a->logits.numel;
  if (n < 1 || n > INT32_MAX) return AMK_DEVERR_BAD_PARAMS;
  const amk_params_t& q = inst.params;
  if (inst.n_inputs == 2) {
    AMK_TRY_DEV(bind_input(p, inst, 1, &a->candidates));
    if (a->candidates.dtype != AMK_DTYPE_I32) return AMK_DEVERR_BAD_DTYPE;
    if (q.N_tile != 0 || a->candidates.numel < 1 || a->out.numel != 1) return AMK_DEVERR_BAD_PARAMS;
    a->form = ArgmaxForm::kCombine;
  } else if (q.N_tile != 0) {
    if (q.n_off < 0 || q.N_tile < 1 || int64_t{q.n_off} + q.N_tile > n) return AMK_DEVERR_BAD_PARAMS;
    if (q.m_off < 0 || q.m_off >= a->out.numel) return AMK_DEVERR_BAD_PARAMS;
    a->form = ArgmaxForm::kTile;
    a->begin = q.n_off;
    a->end = int64_t{q.n_off} + q.N_tile;
    a->slot = q.m_off;
    return AMK_DEVERR_NONE;
  } else if (a->out.numel != 1) {
    return AMK_DEVERR_BAD_PARAMS;
  }
  a->begin = 0;
  a->end = n;
  return AMK_DEVERR_NONE;
}

/// The better of two (value, index) candidates: larger value, then lower index; NaN loses.
/// Associative and commutative, so a GPU tree reduction picks the same token as a scan.
AMK_HD bool argmax_better(float v, int64_t i, float best_v, int64_t best_i) {
  if (v != v) return false;
  if (best_v != best_v) return true;
  return v > best_v || (v == best_v && i < best_i);
}

/// The logits index a combine's candidate c names; INDEX_OUT_OF_RANGE outside [0, logits).
AMK_HD int32_t argmax_candidate(const SampleArgmaxArgs& a, int64_t c, int64_t* index) {
  const int32_t i = static_cast<const int32_t*>(a.candidates.ptr)[a.candidates.offset(c)];
  if (i < 0 || i >= a.logits.numel) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  *index = i;
  return AMK_DEVERR_NONE;
}

/// Where the result goes: the token, or the tile's candidate slot.
AMK_HD int32_t* argmax_result(const SampleArgmaxArgs& a) {
  return static_cast<int32_t*>(a.out.ptr) + a.out.offset(a.form == ArgmaxForm::kTile ? a.slot : 0);
}

/// CPU reference of SAMPLE_ARGMAX.
int32_t sample_argmax_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
