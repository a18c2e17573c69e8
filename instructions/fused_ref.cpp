// instructions/fused_ref.cpp: CPU reference of FUSED. Per row of x: build the fp32 prologue vector,
// stream the tile's weight rows, add the residual tile, store. A residual element is read just
// before the same y element is written, which is what makes y == residual safe.
#include <vector>

#include "instructions/attention_gemv.h"
#include "instructions/attention_tile.h"
#include "instructions/common/matmul_ref.h"
#include "instructions/common/reduce.h"
#include "instructions/fused.h"
#include "instructions/mlp_fold.h"
#include "instructions/rms_norm.h"
#include "instructions/rope_append.h"
#include "instructions/silu_mul.h"

namespace amk::instructions {
namespace {

/// ATTENTION_GEMV_ADD as its two halves (split_attention_gemv): the unfused references, so the
/// fused task equals ROPE_ATTENTION then GEMV_ADD bit for bit.
int32_t attention_gemv_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  const int64_t elems = attention_gemv_row_elems(inst.params);
  std::vector<uint32_t> row(static_cast<size_t>(elems > 0 ? elems : 1));  // 4 bytes per element: any float dtype
  AttentionGemvSplit s;
  amk_program_t view;
  AMK_TRY_DEV(split_attention_gemv(prog, inst, row.data(), &s, &view));
  AMK_TRY_DEV(attention_tile_ref(view, s.attention));
  return fused_ref(view, s.gemv);
}

}  // namespace

int32_t fused_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  if (fused_recipe(inst) == kRecipeRopeAppend) return rope_append_ref(prog, inst);
  if (fused_recipe(inst) == kRecipeRopeAttention) return attention_tile_ref(prog, inst);
  if (fused_recipe(inst) == kRecipeMlpFold) return mlp_fold_ref(prog, inst);
  if (fused_recipe(inst) == kRecipeAttentionGemvAdd) return attention_gemv_ref(prog, inst);
  FusedArgs a;
  AMK_TRY_DEV(decode_fused_at_step(prog, inst, &a));
  const MatmulArgs& mm = a.mm;
  const bool rmsnorm = recipe_is_rmsnorm_gemv(a.recipe);
  const int64_t K = mm.K, width = mm.n_end - mm.n_begin;
  std::vector<float> xf(static_cast<size_t>(K)), aux(static_cast<size_t>(K)), dots(static_cast<size_t>(width));
  if (rmsnorm) stage_row_f32(a.aux, 0, K, aux.data());
  for (int64_t r = mm.m_begin; r < mm.m_end; ++r) {
    stage_row_f32(mm.x, r, K, xf.data());
    if (rmsnorm) {
      const float inv = rms_inv(row_sum_sq(xf.data(), K, 0.0f), K, a.eps);
      for (int64_t k = 0; k < K; ++k) xf[k] = xf[k] * inv * aux[k];
    } else if (a.has_aux) {
      stage_row_f32(a.aux, r, K, aux.data());
      for (int64_t k = 0; k < K; ++k) xf[k] = silu_mul(xf[k], aux[k]);
    }
    matmul_row_dots(xf.data(), mm.w, K, mm.n_begin, mm.n_end, dots.data());
    // Recipes 10 and 12: the dots of rows (n, n + 1) are a head's rotate-half pair (n_begin and
    // the width are even: decode_step_gemv_static), rotated in fp32 before the one rounding.
    if (a.step.inv_freq != nullptr)
      for (int64_t j = 0; j + 1 < width; j += 2) step_gemv_rotate(a.step, mm.n_begin + j, &dots[j], &dots[j + 1]);
    for (int64_t j = 0; j < width; ++j) {
      const int64_t i = r * mm.n_out + mm.n_begin + j;
      const float v = a.has_residual ? dots[j] + a.residual.load(i) : dots[j];
      mm.y.store(i, v);
      if (a.has_copy) a.copy.store(i, v);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
