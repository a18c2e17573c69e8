// instructions/fused.h: FUSED (19) runs the recipe in flags bits 16-31 (ir::FusedRecipe) as one
// GEMV tile with a prologue on x and an epilogue on y. The prologue's vector stays fp32 (it is not
// an output, so it is never rounded to a buffer dtype). y may be the residual buffer itself.
#pragma once
#include <math.h>

/// 1 where the step-position GEMVs (recipes 10-12) are decoded: the host, and the device code of
/// the kernels that run them (vm/cuda/persistent_kernel.cu: AMK_NO_STEP_STREAM marks the others,
/// whose loader inlines this decode into its per-task work).
#if defined(AMK_NO_STEP_STREAM) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
#define AMK_STEP_GEMV_DECODE 0
#else
#define AMK_STEP_GEMV_DECODE 1
#endif  // AMK_NO_STEP_STREAM, device pass

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
  // The step-position GEMVs (docs/ROPE_IN_GEMV.md): RMSNORM_GEMV's tile, whose output pairs
  // (2i, 2i + 1) of each head are rotated at step.pos (W's rows in rope-pair order) and / or
  // stored into row step.pos of a KV cache.
  kRecipeRmsNormGemvRope = 10,        ///< [x, norm_w, W, inv_freq] -> y: rotated pairs
  kRecipeRmsNormGemvAppend = 11,      ///< [x, norm_w, W] -> cache row step.pos
  kRecipeRmsNormGemvRopeAppend = 12,  ///< [x, norm_w, W, inv_freq] -> cache row step.pos, rotated pairs
};

/// The recipe id of a FUSED instruction (flags bits 16-31).
AMK_HD int32_t fused_recipe(const amk_instruction_t& inst) {
  return static_cast<int32_t>(static_cast<uint32_t>(inst.params.flags) >> AMK_FLAG_RECIPE_SHIFT);
}

/// Whether `recipe` is one of the step-position GEMVs (10-12).
AMK_HD bool recipe_is_step_gemv(int32_t recipe) {
  return recipe >= kRecipeRmsNormGemvRope && recipe <= kRecipeRmsNormGemvRopeAppend;
}

/// Whether a GEMV recipe's x is rmsnorm(x) * norm_w (RMSNORM_GEMV and the step-position GEMVs).
AMK_HD bool recipe_is_rmsnorm_gemv(int32_t recipe) {
#if !AMK_STEP_GEMV_DECODE
  return recipe == kRecipeRmsNormGemv;  // a kernel without the step-position GEMVs (decode_fused)
#else
  return recipe == kRecipeRmsNormGemv || recipe_is_step_gemv(recipe);
#endif  // a kernel with the step-position GEMVs, or the host
}

/// The step-dependent epilogue of recipes 10-12: rotate adjacent output pairs and / or store into
/// a KV cache's row step.pos. Plain data (a blob copies it byte for byte).
/// 32 bytes: GemvPlan, the largest blob, then keeps its size (928 B a task with the header), and
/// the persistent kernel copies no more per task than before recipes 10-12.
struct StepGemv {
  const float* inv_freq = nullptr;  ///< F32 [head_dim / 2]; null: no rotation
  void* cache = nullptr;            ///< the KV cache's row 0 (null: y is the output itself)
  int32_t head_dim = 0;             ///< the rotation's head size (even); 0 without one
  int32_t pos = 0;                  ///< the step's position (bind_step_gemv), the rotation angle's and the row's
  int32_t cache_rows = 0;           ///< rows of the cache: pos must be one
  int32_t cache_row_bytes = 0;      ///< bytes from one cache row to the next
};

/// Decoded FUSED operands: mm.x is x or gate; aux is norm_w or up.
struct FusedArgs {
  int32_t recipe = 0;
  MatmulArgs mm;
  Tensor aux, residual;
  Tensor copy;  ///< GEMV_ADD_COPY's second output: the same [rows, N_out] values as y
  bool has_aux = false, has_residual = false, has_copy = false;
  float eps = 0.0f;
  StepGemv step;  ///< recipes 10-12 (recipe_is_step_gemv); zero otherwise
};

/// Recipes 10-12, the static part: inv_freq (input 3) an F32 contiguous table of head_dim / 2
/// entries for an even head_dim that divides N_out, with an even tile (whole pairs); the appends'
/// y a rank-2 cache of N_out columns, bound as its row 0 (`y`, rank 1) until the step binds it.
/// BAD_PARAMS otherwise; the step (position) is bind_step_gemv's.
AMK_HD int32_t decode_step_gemv_static(const amk_program_t& p, const amk_instruction_t& inst, int32_t recipe,
                                       Tensor* y, StepGemv* st) {
  *st = StepGemv{};
  const amk_params_t& pr = inst.params;
  if ((pr.flags & AMK_FLAG_STEP_POS) == 0) return AMK_DEVERR_BAD_PARAMS;  // the position is the step's
  if (recipe != kRecipeRmsNormGemvAppend) {
    Tensor f;
    AMK_TRY_DEV(bind_input(p, inst, 3, &f));
    const int64_t hd = pr.head_dim;
    if (f.dtype != AMK_DTYPE_F32 || !f.contiguous || hd < 2 || hd % 2 != 0 || hd > 0x7fffffff || f.numel != hd / 2 ||
        pr.n_off % 2 != 0 || pr.N_tile % 2 != 0)
      return AMK_DEVERR_BAD_PARAMS;
    st->inv_freq = static_cast<const float*>(f.ptr);
    st->head_dim = static_cast<int32_t>(hd);
  }
  if (recipe != kRecipeRmsNormGemvRope) {
    if (y->rank != 2 || !dtype_is_float(y->dtype) || y->stride[1] != 1) return AMK_DEVERR_BAD_PARAMS;
    const int64_t row_bytes = y->stride[0] * (dtype_bits(y->dtype) / 8);
    if (y->shape[0] > 0x7fffffff || row_bytes > 0x7fffffff) return AMK_DEVERR_BAD_PARAMS;  // StepGemv's 32 bits
    st->cache = y->ptr;
    st->cache_rows = static_cast<int32_t>(y->shape[0]);
    st->cache_row_bytes = static_cast<int32_t>(row_bytes);
    AMK_TRY_DEV(select_row(y, 0));
  }
  return AMK_DEVERR_NONE;
}

/// Recipes 10-12, the step: the position (INDEX_OUT_OF_RANGE when it is negative, or not a row of
/// the cache an append writes), and y moved to the cache's row pos.
AMK_HD int32_t bind_step_gemv(const amk_program_t& p, const amk_instruction_t& inst, StepGemv* st, Tensor* y) {
  const int64_t pos = effective_pos(p, inst);
  if (pos < 0 || pos > 0x7fffffff || (st->cache != nullptr && pos >= st->cache_rows)) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  st->pos = static_cast<int32_t>(pos);
  if (st->cache != nullptr) y->ptr = static_cast<char*>(st->cache) + pos * int64_t{st->cache_row_bytes};
  return AMK_DEVERR_NONE;
}

/// sin and cos of a rope angle (|ang| < 2^16 * 2 pi: positions below ~400k at inv_freq <= 1). The
/// host (the CPU VM, the numerics oracle) takes std::sin / std::cos. The device reduces the angle to
/// [-pi, pi] with a two-part 2 pi (6.28125 holds 8 bits, so k * 6.28125 is exact for k < 2^16) and
/// takes the hardware's __sinf / __cosf there, whose absolute error is below 1e-6: far inside a
/// bf16 output's rounding, and without cosf's slow path, which put a local-memory frame and its
/// code into the weight stream's chunk loop (docs/PERFORMANCE.md row 185).
AMK_HD void rope_sincos(float ang, float* s, float* c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float k = rintf(ang * 0.15915494309189535f);  // ang / (2 pi)
  const float r = fmaf(-k, 1.9353071795864769e-3f, fmaf(-k, 6.28125f, ang));
  *s = __sinf(r);
  *c = __cosf(r);
#else
  *s = sinf(ang);
  *c = cosf(ang);
#endif  // device
}

/// Output pair (a, b) of rows (n, n + 1), n even, rotated as ROPE rotates elements (i, i + hd / 2)
/// of a head: W's rows are in rope-pair order (docs/ROPE_IN_GEMV.md), so n's pair is i = (n mod
/// hd) / 2, at the angle pos * inv_freq[i] (the fp32 product, as ROPE).
AMK_HD void step_gemv_rotate(const StepGemv& st, int64_t n, float* a, float* b) {
  const int32_t i = static_cast<int32_t>(n) % st.head_dim / 2;  // 32-bit: a 64-bit modulo is a GPU subroutine
  float s, c;
  rope_sincos(static_cast<float>(st.pos) * st.inv_freq[i], &s, &c);
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x1 * c + x0 * s;
}

/// The GEMV recipes (1-4, 8, and 10-12 without their step: bind_fused_step). BAD_PARAMS for any other recipe (ROPE_APPEND decodes into its own
/// RopeAppendArgs, ROPE_ATTENTION into AttentionTileArgs, ATTENTION_GEMV_ADD splits:
/// attention_gemv.h), the wrong input count, or operands that do not fit the tile (as GEMV_TILE;
/// norm_w has K elements, up matches gate, residual is [rows, N_out]).
AMK_HD int32_t decode_fused(const amk_program_t& p, const amk_instruction_t& inst, FusedArgs* a) {
  a->recipe = fused_recipe(inst);
  int32_t w_index = 1, n_in = 3, n_out = 1;
  switch (a->recipe) {
    case kRecipeGemvAdd: a->has_residual = true; break;
#if AMK_STEP_GEMV_DECODE
    // Not in the device code of a kernel without them (vm/cuda/persistent_kernel.cu): there this
    // decode is inlined into the loader's per-task work, and they are BAD_PARAMS anyway.
    case kRecipeRmsNormGemvRope:
    case kRecipeRmsNormGemvRopeAppend: a->has_aux = true; w_index = 2; n_in = 4; break;
    case kRecipeRmsNormGemvAppend: a->has_aux = true; w_index = 2; break;
#endif  // a kernel with the step-position GEMVs, or the host
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
#if AMK_STEP_GEMV_DECODE
  if (recipe_is_step_gemv(a->recipe)) AMK_TRY_DEV(decode_step_gemv_static(p, inst, a->recipe, &y, &a->step));
#endif  // a kernel with the step-position GEMVs, or the host
  const amk_params_t& pr = inst.params;
  AMK_TRY_DEV(matmul_bind(x, w, y, pr.K, pr.n_off, pr.N_tile, &a->mm));
  if (a->has_aux) {
    AMK_TRY_DEV(bind_input(p, inst, 1, &a->aux));
    AMK_TRY_DEV(require_float(a->aux));
    const int64_t want = a->recipe == kRecipeSiluMulGemv || a->recipe == kRecipeSiluMulGemvAdd ? x.numel : a->mm.K;
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

/// The step-dependent part of decode_fused: recipes 10-12's position (nothing for the others).
AMK_HD int32_t bind_fused_step(const amk_program_t& p, const amk_instruction_t& inst, FusedArgs* a) {
  return recipe_is_step_gemv(a->recipe) ? bind_step_gemv(p, inst, &a->step, &a->mm.y) : AMK_DEVERR_NONE;
}

/// decode_fused with the step bound (the CPU reference's and the device's full decode).
AMK_HD int32_t decode_fused_at_step(const amk_program_t& p, const amk_instruction_t& inst, FusedArgs* a) {
  AMK_TRY_DEV(decode_fused(p, inst, a));
  return bind_fused_step(p, inst, a);
}

/// CPU reference of FUSED.
int32_t fused_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
