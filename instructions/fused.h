// instructions/fused.h: FUSED (19) runs the recipe in flags bits 16-31 (ir::FusedRecipe) as one
// GEMV tile with a prologue on x and an epilogue on y. The prologue's vector stays fp32 (it is not
// an output, so it is never rounded to a buffer dtype). y may be the residual buffer itself.
#pragma once
#include "instructions/common/matmul.h"

namespace amk::instructions {

/// Recipe ids (mirror ir::FusedRecipe; tests/instructions check they agree).
enum FusedRecipeId : int32_t {
  kRecipeGemvAdd = 1,         ///< [x, W, residual]: y = x . W[n] + residual[n]
  kRecipeRmsNormGemv = 2,     ///< [x, norm_w, W]: y = (rmsnorm(x) * norm_w) . W[n]
  kRecipeSiluMulGemv = 3,     ///< [gate, up, W]: y = (silu(gate) * up) . W[n]
  kRecipeSiluMulGemvAdd = 4,  ///< [gate, up, W, residual]: SILU_MUL_GEMV + residual[n]
  kRecipeRopeAppend = 5,      ///< [x, inv_freq, cache]: cache[pos] = rope(x) (rope_append.h; not a GEMV)
  kRecipeRopeAttention = 6,   ///< [q, k_cache, v_cache, k_new, v_new, inv_freq] (attention_tile.h; not a GEMV)
  // 7: RMSNORM_MLP_FOLD (mlp_fold.h; not a GEMV tile)
  kRecipeGemvAddCopy = 8,     ///< [x, W, residual] -> y, copy: GEMV_ADD written to both outputs
  kRecipeAttentionGemvAdd = 9,  ///< [q, k_cache, v_cache, k_new, v_new, inv_freq, W, residual]: ROPE_ATTENTION
                                ///< of every head, then GEMV_ADD of that row (attention_gemv.h; not decode_fused's)
};

/// The recipe id of a FUSED instruction (flags bits 16-31).
AMK_HD int32_t fused_recipe(const amk_instruction_t& inst) {
  return static_cast<int32_t>(static_cast<uint32_t>(inst.params.flags) >> AMK_FLAG_RECIPE_SHIFT);
}

/// Decoded FUSED operands: mm.x is x or gate; aux is norm_w or up.
struct FusedArgs {
  int32_t recipe = 0;
  MatmulArgs mm;
  Tensor aux, residual;
  Tensor copy;  ///< GEMV_ADD_COPY's second output: the same [rows, N_out] values as y
  bool has_aux = false, has_residual = false, has_copy = false;
  float eps = 0.0f;
};

/// The GEMV recipes (1-4, 8). BAD_PARAMS for any other recipe (ROPE_APPEND decodes into its own
/// RopeAppendArgs, ROPE_ATTENTION into AttentionTileArgs, ATTENTION_GEMV_ADD splits:
/// attention_gemv.h), the wrong input count, or operands that do not fit the tile (as GEMV_TILE;
/// norm_w has K elements, up matches gate, residual is [rows, N_out]).
AMK_HD int32_t decode_fused(const amk_program_t& p, const amk_instruction_t& inst, FusedArgs* a) {
  a->recipe = fused_recipe(inst);
  int32_t w_index = 1, n_in = 3, n_out = 1;
  switch (a->recipe) {
    case kRecipeGemvAdd: a->has_residual = true; break;
    case kRecipeGemvAddCopy: a->has_residual = a->has_copy = true; n_out = 2; break;
    case kRecipeRmsNormGemv: a->has_aux = true; w_index = 2; break;
    case kRecipeSiluMulGemv: a->has_aux = true; w_index = 2; break;
    case kRecipeSiluMulGemvAdd: a->has_aux = a->has_residual = true; w_index = 2; n_in = 4; break;
    default: return AMK_DEVERR_BAD_PARAMS;
  }
  AMK_TRY_DEV(check_arity(inst, n_in, n_in, n_out));
  Tensor x, w, y;
  AMK_TRY_DEV(bind_input(p, inst, 0, &x));
  AMK_TRY_DEV(bind_input(p, inst, w_index, &w));
  AMK_TRY_DEV(bind_output(p, inst, 0, &y));
  const amk_params_t& pr = inst.params;
  AMK_TRY_DEV(matmul_bind(x, w, y, pr.K, pr.n_off, pr.N_tile, &a->mm));
  if (a->has_aux) {
    AMK_TRY_DEV(bind_input(p, inst, 1, &a->aux));
    AMK_TRY_DEV(require_float(a->aux));
    const int64_t want = a->recipe == kRecipeRmsNormGemv ? a->mm.K : x.numel;
    if (a->aux.numel != want) return AMK_DEVERR_BAD_PARAMS;
  }
  if (a->has_residual) {
    AMK_TRY_DEV(bind_input(p, inst, n_in - 1, &a->residual));
    AMK_TRY_DEV(matmul_check_addend(a->residual, a->mm.rows * a->mm.n_out));
  }
  if (a->has_copy) {
    AMK_TRY_DEV(bind_output(p, inst, 1, &a->copy));
    AMK_TRY_DEV(matmul_check_addend(a->copy, a->mm.rows * a->mm.n_out));
  }
  a->eps = pr.eps;
  return AMK_DEVERR_NONE;
}

/// CPU reference of FUSED.
int32_t fused_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
