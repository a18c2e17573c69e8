// instructions/attention_tile.h: ATTENTION_TILE (7), single-query GQA attention over a KV window
// for the q-head range [n_off, n_off + N_tile) (N_tile == 0: all heads). kv head g = h / (n_heads /
// n_kv_heads). With PARTIAL_WRITE each head writes [acc[hd], m, l] (F32, unnormalised) for
// ATTENTION_COMBINE; an empty or fully masked window gives m = -inf, l = 0, acc = 0.
// FUSED ROPE_ATTENTION (recipe 6) is the same attention at a decode step whose rope and append
// have not run: inputs [q, k_cache, v_cache, k_new, v_new, inv_freq]; q is rotated (rotate-half,
// ROPE's arithmetic) at p = step.pos and rounded to q's dtype, and key p is k_new rotated and
// rounded to the cache's dtype with value v_new rounded likewise, so the result is ROPE(q),
// ROPE_APPEND(k), KV_APPEND(v), ATTENTION_TILE without the cache row p being read (the tasks that
// write it may run at the same time). It needs STEP_POS | STEP_KV with pos 0.
#pragma once
#include <math.h>

#include "instructions/common/tensor.h"
#include "instructions/fused.h"

namespace amk::instructions {

/// Decoded ATTENTION_TILE operands.
struct AttentionTileArgs {
  Tensor q, k, v, bias, out;
  Tensor k_new, v_new, inv_freq;    ///< ROPE_ATTENTION: the step's k / v row and ROPE's table
  bool has_bias = false, partial = false;
  bool rope_fresh = false;          ///< ROPE_ATTENTION
  bool fresh_key = false;           ///< ROPE_ATTENTION and p in the window: key p is the fresh row
  /// ROPE_ATTENTION: rotate through Tensor::load even where the raw-operand prologue applies (the
  /// host sets it in the task's blob under AMK_ROPE_PROLOGUE_GENERIC=1, a measuring knob).
  bool generic_prologue = false;
  /// Whether the operands' layout admits the tensor-core path (where the device has one): decided
  /// once where the static operands are decoded (attention_layout_of; the GPU executor does it on
  /// the host), so that the task's head reads one byte instead of re-testing pointers and dtypes
  /// through the shared Args on its critical path (docs/PERFORMANCE.md row 171). In padding.
  bool mma_layout = false;
  int64_t fresh_pos = 0;            ///< ROPE_ATTENTION: p, the rotation position
  int64_t head_dim = 0, n_heads = 0, n_kv_heads = 0, group = 1;
  int64_t seq = 0;                  ///< S: cache rows
  int64_t h_begin = 0, h_end = 0;   ///< q heads of this task
  int64_t j_begin = 0, j_end = 0;   ///< the cache rows to read, [j_begin, j_end) (p excluded)
  int64_t out_width = 0;            ///< hd, or hd + 2 with PARTIAL_WRITE
  float scale = 1.0f;
};

/// Effective window under STEP_KV: [kv_start, min(kv_start + kv_len, step.pos + 1)), never negative.
AMK_HD void attention_window(const amk_program_t& p, const amk_params_t& pr, int64_t* begin, int64_t* end) {
  *begin = pr.kv_start;
  *end = static_cast<int64_t>(pr.kv_start) + pr.kv_len;
  if (pr.flags & AMK_FLAG_STEP_KV) {
    const int64_t live = step_pos(p) + 1;
    if (live < *end) *end = live;
    if (*end < *begin) *end = *begin;
  }
}

/// AttentionTileArgs::mma_layout from the decoded q, k, v and head_dim: the vector path's layout
/// (attention_vec_ok's conditions, restated here for the host: K and V contiguous, one dtype,
/// 16-byte aligned rows and head slices; a 16-bit row of 64 or 128 always spans a power of two
/// of 16-byte lanes, at most 16) with
/// 16-bit q and K of one dtype, head_dim 64 or 128, and q contiguous and 16-byte aligned, or
/// strided.
AMK_HD void attention_layout_of(AttentionTileArgs* a) {
  const bool half = a->k.dtype == AMK_DTYPE_BF16 || a->k.dtype == AMK_DTYPE_F16;
  a->mma_layout = half && a->k.contiguous && a->v.contiguous && a->v.dtype == a->k.dtype && a->q.dtype == a->k.dtype &&
                  (a->head_dim == 64 || a->head_dim == 128) &&
                  ((reinterpret_cast<uintptr_t>(a->k.ptr) | reinterpret_cast<uintptr_t>(a->v.ptr)) & 15u) == 0 &&
                  (!a->q.contiguous || (reinterpret_cast<uintptr_t>(a->q.ptr) & 15u) == 0);
}

/// BAD_PARAMS for inconsistent head counts or shapes, a head range outside [0, n_heads), a
/// negative kv_start / kv_len, or a static window past the cache; INDEX_OUT_OF_RANGE when the
/// STEP_KV window passes the cache; BAD_DTYPE for non-float operands or a non-F32 partial.
/// Everything but the STEP_KV window (decode_attention_tile = this + bind_attention_tile_step).
/// ROPE_ATTENTION also: BAD_PARAMS unless flags hold STEP_POS | STEP_KV, pos is 0, head_dim is
/// even and k_new / v_new are one cache row and inv_freq head_dim / 2 entries.
AMK_HD int32_t decode_attention_tile_static(const amk_program_t& p, const amk_instruction_t& inst,
                                            AttentionTileArgs* a) {
  a->rope_fresh = inst.op == AMK_OP_FUSED;
  if (a->rope_fresh && fused_recipe(inst) != kRecipeRopeAttention) return AMK_DEVERR_BAD_PARAMS;
  AMK_TRY_DEV(a->rope_fresh ? check_arity(inst, 6, 6, 1) : check_arity(inst, 3, 4, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->q));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->k));
  AMK_TRY_DEV(bind_input(p, inst, 2, &a->v));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->out));
  // A stacked output [S, n_heads * width] (split-KV partials, docs/OPCODES.md): the task writes
  // its row m_off.
  AMK_TRY_DEV(select_row(&a->out, inst.params.m_off));
  a->has_bias = !a->rope_fresh && inst.n_inputs == 4;
  if (a->has_bias) AMK_TRY_DEV(bind_input(p, inst, 3, &a->bias));
  AMK_TRY_DEV(require_float(a->q));
  AMK_TRY_DEV(require_float(a->k));
  AMK_TRY_DEV(require_float(a->v));
  AMK_TRY_DEV(require_float(a->out));
  if (a->has_bias) AMK_TRY_DEV(require_float(a->bias));
  const amk_params_t& pr = inst.params;
  a->partial = (pr.flags & AMK_FLAG_PARTIAL_WRITE) != 0;
  if (a->partial && a->out.dtype != AMK_DTYPE_F32) return AMK_DEVERR_BAD_DTYPE;
  a->head_dim = pr.head_dim;
  a->n_heads = pr.n_heads;
  a->n_kv_heads = pr.n_kv_heads;
  if (a->head_dim < 1 || a->n_heads < 1 || a->n_kv_heads < 1 || a->n_heads % a->n_kv_heads != 0)
    return AMK_DEVERR_BAD_PARAMS;
  a->group = a->n_heads / a->n_kv_heads;
  const int64_t kv_row = a->n_kv_heads * a->head_dim;
  if (a->q.numel != a->n_heads * a->head_dim || a->k.numel % kv_row != 0 || a->v.numel != a->k.numel)
    return AMK_DEVERR_BAD_PARAMS;
  a->seq = a->k.numel / kv_row;
  if (a->has_bias && a->bias.numel != a->seq) return AMK_DEVERR_BAD_PARAMS;
  AMK_TRY_DEV(decode_head_range(pr, a->n_heads, &a->h_begin, &a->h_end));
  a->out_width = a->partial ? a->head_dim + 2 : a->head_dim;
  if (a->out.numel != a->n_heads * a->out_width) return AMK_DEVERR_BAD_PARAMS;
  if (pr.kv_start < 0 || pr.kv_len < 0) return AMK_DEVERR_BAD_PARAMS;
  a->scale = pr.scale;
  attention_layout_of(a);
  if (!a->rope_fresh) return AMK_DEVERR_NONE;
  constexpr int32_t kStepFlags = AMK_FLAG_STEP_POS | AMK_FLAG_STEP_KV;
  if ((pr.flags & kStepFlags) != kStepFlags || pr.pos != 0 || a->head_dim % 2 != 0) return AMK_DEVERR_BAD_PARAMS;
  AMK_TRY_DEV(bind_input(p, inst, 3, &a->k_new));
  AMK_TRY_DEV(bind_input(p, inst, 4, &a->v_new));
  AMK_TRY_DEV(bind_input(p, inst, 5, &a->inv_freq));
  AMK_TRY_DEV(require_float(a->k_new));
  AMK_TRY_DEV(require_float(a->v_new));
  AMK_TRY_DEV(require_float(a->inv_freq));
  if (a->k_new.numel != kv_row || a->v_new.numel != kv_row || a->inv_freq.numel != a->head_dim / 2)
    return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// The part of the decode that depends on the step (the STEP_KV window), for operands decoded
/// once by decode_attention_tile_static (the GPU executor does that on the host).
/// ROPE_ATTENTION: INDEX_OUT_OF_RANGE when p is not a row of the cache (as ROPE_APPEND), and the
/// window's last row p leaves [j_begin, j_end) for fresh_key.
AMK_HD int32_t bind_attention_tile_step(const amk_program_t& p, const amk_instruction_t& inst, AttentionTileArgs* a) {
  attention_window(p, inst.params, &a->j_begin, &a->j_end);
  if (a->j_end > a->seq)
    return (inst.params.flags & AMK_FLAG_STEP_KV) ? AMK_DEVERR_INDEX_OUT_OF_RANGE : AMK_DEVERR_BAD_PARAMS;
  a->fresh_key = false;
#ifdef AMK_EMU_NO_ROPE_PROLOGUE
  // Timing emulation only, wrong results: ROPE_ATTENTION as if q came rotated from its GEMV and
  // key p were in the cache already (rope in the q / k GEMVs' epilogue): no prologue, the window
  // read whole from the cache. The ceiling of that design (docs/PERFORMANCE.md row 159).
  a->rope_fresh = false;
#endif  // AMK_EMU_NO_ROPE_PROLOGUE
  if (a->rope_fresh) {
    a->fresh_pos = effective_pos(p, inst);
    if (a->fresh_pos < 0 || a->fresh_pos >= a->seq) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
    // STEP_KV ends the window at p + 1 at most, so p is its last row when it is in it.
    a->fresh_key = a->j_begin <= a->fresh_pos && a->fresh_pos < a->j_end;
    if (a->fresh_key) a->j_end = a->fresh_pos;
  }
  return AMK_DEVERR_NONE;
}

/// ROPE's rotate-half of one element from its pair (lo = x[i], hi = x[i + hd/2]) and the table's
/// inv_freq[i]: a = pos * inv_freq[i]; the lower half is lo cos a - hi sin a, the upper (`upper`)
/// hi cos a + lo sin a.
AMK_HD float rope_rotate(float lo, float hi, float inv_freq_i, float pos, bool upper) {
  const float ang = pos * inv_freq_i;
  const float c = cosf(ang), s = sinf(ang);
  return upper ? hi * c + lo * s : lo * c - hi * s;
}

/// Element d of the head x[base, base + hd) rotated at `pos` as ROPE does (rope_rotate of its
/// pair, i = d mod hd/2).
AMK_HD float rope_element(const Tensor& x, int64_t base, int64_t d, int64_t hd, const Tensor& inv_freq, float pos) {
  const int64_t half = hd / 2, i = d < half ? d : d - half;
  const float f = inv_freq.load(i);
  return rope_rotate(x.load(base + i), x.load(base + i + half), f, pos, d >= half);
}

AMK_HD int32_t decode_attention_tile(const amk_program_t& p, const amk_instruction_t& inst, AttentionTileArgs* a) {
  AMK_TRY_DEV(decode_attention_tile_static(p, inst, a));
  return bind_attention_tile_step(p, inst, a);
}

/// CPU reference of ATTENTION_TILE.
int32_t attention_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
