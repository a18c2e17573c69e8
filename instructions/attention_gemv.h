// instructions/attention_gemv.h: FUSED ATTENTION_GEMV_ADD (recipe 9), attention recomputed inside
// every o_proj tile (docs/ATTENTION_IN_O.md): inputs [q, k_cache, v_cache, k_new, v_new, inv_freq,
// W, residual], one output, the GEMV's tile (it may be the residual itself). It is ROPE_ATTENTION
// over every query head, each value rounded to q's dtype as the unfused program's attention buffer
// holds it, then GEMV_ADD of that row: out[n] = attn . W[n] + residual[n] for n in the tile
// [n_off, n_off + N_tile). n_off / N_tile are the GEMV's; the attention has no head range.
//
// The CPU reference and the GPU's generic path run the task as its two halves
// (split_attention_gemv): a ROPE_ATTENTION instruction into a row the caller owns (host memory,
// shared memory) and a GEMV_ADD of that row, over a buffer table of their own, so that both
// halves are the unfused code and the fused task equals the unfused pair bit for bit on the CPU.
// The GPU's weight stream has a path of its own (AttentionRowPlan, attention_row.cuh).
#pragma once
#include "instructions/attention_tile.h"
#include "instructions/fused.h"

namespace amk::instructions {

/// Buffer table of a split task: its 8 inputs, its output, then the attention row.
inline constexpr int32_t kSplitOut = 8, kSplitRow = 9, kSplitBuffers = 10;

/// The two halves of an ATTENTION_GEMV_ADD task (split_attention_gemv).
struct AttentionGemvSplit {
  amk_buffer_t buffers[kSplitBuffers];
  amk_instruction_t attention;  ///< FUSED ROPE_ATTENTION [inputs 0-5] -> the row, every head
  amk_instruction_t gemv;       ///< FUSED GEMV_ADD [the row, W, residual] -> the output
};

/// Elements of the attention row (n_heads * head_dim), or 0 when the params make no row (then the
/// halves' decodes report the error).
AMK_HD int64_t attention_gemv_row_elems(const amk_params_t& pr) {
  if (pr.n_heads < 1 || pr.head_dim < 1 || pr.n_heads > (1 << 20) || pr.head_dim > (1 << 20)) return 0;
  return static_cast<int64_t>(pr.n_heads) * pr.head_dim;
}

/// Split `inst` into `*s`, the row at `row` (room for attention_gemv_row_elems of q's dtype), and make
/// `*view` the program the halves run against (p with s->buffers as its table; the step is p's).
/// BAD_PARAMS for the wrong arity, a buffer index outside p's table, PARTIAL_WRITE, params that
/// make no row or K != n_heads * head_dim; BAD_DTYPE for a q that is not a float. Every other
/// refusal is one of the halves' decodes.
AMK_HD int32_t split_attention_gemv(const amk_program_t& p, const amk_instruction_t& inst, void* row,
                                    AttentionGemvSplit* s, amk_program_t* view) {
  if (inst.op != AMK_OP_FUSED || fused_recipe(inst) != kRecipeAttentionGemvAdd) return AMK_DEVERR_BAD_PARAMS;
  AMK_TRY_DEV(check_arity(inst, 8, 8, 1));
  const amk_params_t& pr = inst.params;
  const int64_t elems = attention_gemv_row_elems(pr);
  if (elems == 0 || pr.K != elems || (pr.flags & AMK_FLAG_PARTIAL_WRITE) != 0) return AMK_DEVERR_BAD_PARAMS;
  for (int32_t i = 0; i < 9; ++i) {
    const int32_t index = i < 8 ? inst.inputs[i] : inst.outputs[0];
    if (index < 0 || index >= p.n_buffers || p.buffers == nullptr) return AMK_DEVERR_BAD_PARAMS;
    s->buffers[i] = p.buffers[index];
  }
  const int32_t q_dtype = s->buffers[0].dtype;
  if (!dtype_is_float(q_dtype)) return AMK_DEVERR_BAD_DTYPE;
  amk_buffer_t& r = s->buffers[kSplitRow];
  r = amk_buffer_t{};
  r.ptr = row;
  r.numel = elems;
  r.rank = 1;
  r.dtype = q_dtype;
  r.shape[0] = elems;
  r.stride[0] = 1;
  const int32_t keep = pr.flags & ((1 << AMK_FLAG_RECIPE_SHIFT) - 1);  // every flag bit but the recipe's
  amk_instruction_t& a = s->attention;
  a = inst;
  a.n_inputs = 6;
  for (int32_t i = 0; i < 6; ++i) a.inputs[i] = i;
  a.inputs[6] = a.inputs[7] = -1;
  a.outputs[0] = kSplitRow;
  a.params.flags = keep | (kRecipeRopeAttention << AMK_FLAG_RECIPE_SHIFT);
  a.params.n_off = 0;
  a.params.N_tile = 0;  // every head
  a.params.m_off = 0;
  amk_instruction_t& g = s->gemv;
  g = inst;
  g.n_inputs = 3;
  g.inputs[0] = kSplitRow;
  g.inputs[1] = 6;
  g.inputs[2] = 7;
  for (int32_t i = 3; i < AMK_MAX_INPUTS; ++i) g.inputs[i] = -1;
  g.outputs[0] = kSplitOut;
  g.params.flags = (pr.flags & ~(AMK_FLAG_STEP_POS | AMK_FLAG_STEP_KV) & ((1 << AMK_FLAG_RECIPE_SHIFT) - 1)) |
                   (kRecipeGemvAdd << AMK_FLAG_RECIPE_SHIFT);
  *view = p;
  view->buffers = s->buffers;
  view->n_buffers = kSplitBuffers;
  return AMK_DEVERR_NONE;
}

/// Floats the generic device path (fused.cuh) keeps at the end of the work area: the row (room
/// for F32) and the split's table with its program view, in 16-byte units.
AMK_HD int64_t attention_gemv_tail_floats(const amk_params_t& pr) {
  const int64_t table = static_cast<int64_t>((sizeof(AttentionGemvSplit) + sizeof(amk_program_t) + 15) / 16 * 4);
  return (attention_gemv_row_elems(pr) + 3) / 4 * 4 + table;
}

/// The weight stream's attention (GemvPlan::attn, prologue kGemvAttention): what the GPU's
/// streamed path reads, decoded by the host (attention_row_plan) with raw device pointers, so
/// that the task's head reads a few words of its staged blob instead of decoding Tensors.
struct AttentionRowPlan {
  const void* q = nullptr;
  const void* k = nullptr;  ///< the caches, [seq, n_kv_heads * head_dim]
  const void* v = nullptr;
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  const float* inv_freq = nullptr;
  const amk_step_t* step = nullptr;  ///< the device's step block (the position)
  int32_t dtype = 0;                 ///< of q, the caches, k_new and v_new (one 16-bit dtype)
  int32_t head_dim = 0, n_heads = 0, n_kv_heads = 0, group = 1;
  int32_t kv_start = 0, kv_end = 0;  ///< the static window [kv_start, kv_start + kv_len)
  int32_t seq = 0;                   ///< cache rows
  float scale = 1.0f;
};

/// Most query heads per KV head the streamed path takes (one warp runs a KV head's heads as the
/// rows of its mma tiles: attention_mma.cuh's kMmaHeads).
inline constexpr int32_t kRowPlanMaxGroup = 8;

/// Whether the GPU kernel streams ATTENTION_GEMV_ADD (its path needs the tensor cores, which
/// every device with the weight ring has; -DAMK_ATTN_NO_MMA builds keep it off the ring).
#ifdef AMK_ATTN_NO_MMA
inline constexpr bool kStreamsAttention = false;
#else
inline constexpr bool kStreamsAttention = true;
#endif  // AMK_ATTN_NO_MMA

/// Shared floats the streamed path needs (attention_row.cuh): the staged x [K], the rotated q
/// rows [K], the fresh key's rotated k and v rows of every KV head [n_kv][2][hd].
AMK_HD int64_t attention_row_floats(const AttentionRowPlan& rp) {
  const int64_t K = int64_t{rp.n_heads} * rp.head_dim;
  return 2 * K + 2 * int64_t{rp.n_kv_heads} * rp.head_dim;
}

/// The streamed path's plan of an ATTENTION_GEMV_ADD task whose attention half decoded into `a`
/// (decode_attention_tile_static of every head; `pr` the task's params) with the device's `step`; false where its layout is
/// not the one path it has: q, K, V, k_new and v_new of one 16-bit dtype and contiguous, 16-byte
/// aligned, head_dim 64, at most kRowPlanMaxGroup heads per KV head, an F32 contiguous table, no
/// bias, and figures that fit 32 bits. Then the task runs the generic path (fused_run).
AMK_HD bool attention_row_plan(const AttentionTileArgs& a, const amk_params_t& pr, const amk_step_t* step,
                               AttentionRowPlan* rp) {
  const bool half = a.k.dtype == AMK_DTYPE_BF16 || a.k.dtype == AMK_DTYPE_F16;
  const auto aligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; };
  if (!half || !a.rope_fresh || a.has_bias || a.partial || a.head_dim != 64 || a.group > kRowPlanMaxGroup) return false;
  if (a.q.dtype != a.k.dtype || a.v.dtype != a.k.dtype || a.k_new.dtype != a.k.dtype || a.v_new.dtype != a.k.dtype)
    return false;
  if (!a.q.contiguous || !a.k.contiguous || !a.v.contiguous || !a.k_new.contiguous || !a.v_new.contiguous ||
      !a.inv_freq.contiguous || a.inv_freq.dtype != AMK_DTYPE_F32)
    return false;
  if (!aligned(a.q.ptr) || !aligned(a.k.ptr) || !aligned(a.v.ptr) || !aligned(a.k_new.ptr) || !aligned(a.v_new.ptr))
    return false;
  const int64_t kv_end = static_cast<int64_t>(pr.kv_start) + pr.kv_len;
  if (a.seq > INT32_MAX || a.n_heads > INT32_MAX || kv_end > INT32_MAX) return false;
  rp->q = a.q.ptr;
  rp->k = a.k.ptr;
  rp->v = a.v.ptr;
  rp->k_new = a.k_new.ptr;
  rp->v_new = a.v_new.ptr;
  rp->inv_freq = static_cast<const float*>(a.inv_freq.ptr);
  rp->step = step;
  rp->dtype = a.k.dtype;
  rp->head_dim = static_cast<int32_t>(a.head_dim);
  rp->n_heads = static_cast<int32_t>(a.n_heads);
  rp->n_kv_heads = static_cast<int32_t>(a.n_kv_heads);
  rp->group = static_cast<int32_t>(a.group);
  rp->seq = static_cast<int32_t>(a.seq);
  rp->kv_start = pr.kv_start;
  rp->kv_end = static_cast<int32_t>(kv_end);
  rp->scale = a.scale;
  return true;
}

/// The step's window of a row plan, as bind_attention_tile_step makes it for ROPE_ATTENTION:
/// cache rows [*j_begin, *j_end) and, when the window holds p, the fresh key p (*fresh).
/// INDEX_OUT_OF_RANGE when p is not a row of the cache or the window passes it.
AMK_HD int32_t attention_row_window(const AttentionRowPlan& rp, int32_t* j_begin, int32_t* j_end, int32_t* pos,
                                    bool* fresh) {
  const int64_t p = rp.step != nullptr ? rp.step->pos : 0;
  if (p < 0 || p >= rp.seq) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  int64_t end = rp.kv_end;
  if (p + 1 < end) end = p + 1;
  if (end < rp.kv_start) end = rp.kv_start;
  if (end > rp.seq) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  *j_begin = rp.kv_start;
  *fresh = rp.kv_start <= p && p < end;
  *j_end = static_cast<int32_t>(*fresh ? p : end);
  *pos = static_cast<int32_t>(p);
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
