// instructions/mlp_fold.h: FUSED RMSNORM_MLP_FOLD (recipe 7, docs/FOLD.md), a whole Llama MLP for
// a range of its intermediate columns, accumulated into the residual. For each row r of x:
// xn = x[r] / rms(x[r]) * norm_w; for n in [n_begin, n_end): g = xn . W[n, 0], u = xn . W[n, 1],
// a = silu(g) * u; then out[r, :] += sum_n a[n] * W[n, 2, :]. W is the stacked [I, 3, K] weight
// (gate row, up row, down_proj's column n). g, u and a stay fp32: they are never a buffer. out is
// F32 and is added to with atomic adds (flags ACCUMULATE), so tasks over disjoint column ranges
// run unordered; the sum's order, and so its last bits, follow their arrival.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

inline constexpr int32_t kRecipeMlpFold = 7;  ///< mirrors ir::FusedRecipe::RmsNormMlpFold

struct MlpFoldArgs {
  Tensor x, norm_w, w, out;
  int64_t K = 0, rows = 0, inter = 0;  ///< x is [rows, K]; W is [inter, 3, K]
  int64_t n_begin = 0, n_end = 0;      ///< the tile's intermediate columns
  float eps = 0.0f;
};

/// Decode a RMSNORM_MLP_FOLD instruction. BAD_PARAMS for another recipe, the wrong arity, a
/// missing ACCUMULATE flag, a W that is not a contiguous [I, 3, K], an x that does not split into
/// rows of K, a norm_w without K elements, an out that is not [rows, K], or a tile outside [0, I);
/// BAD_DTYPE unless x, norm_w and W are float types and out is F32.
AMK_HD int32_t decode_mlp_fold(const amk_program_t& p, const amk_instruction_t& inst, MlpFoldArgs* a) {
  const amk_params_t& pr = inst.params;
  if (static_cast<int32_t>(static_cast<uint32_t>(pr.flags) >> AMK_FLAG_RECIPE_SHIFT) != kRecipeMlpFold ||
      (pr.flags & AMK_FLAG_ACCUMULATE) == 0)
    return AMK_DEVERR_BAD_PARAMS;
  AMK_TRY_DEV(check_arity(inst, 3, 3, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->norm_w));
  AMK_TRY_DEV(bind_input(p, inst, 2, &a->w));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->out));
  AMK_TRY_DEV(require_float(a->x));
  AMK_TRY_DEV(require_float(a->norm_w));
  AMK_TRY_DEV(require_float(a->w));
  if (a->out.dtype != AMK_DTYPE_F32) return AMK_DEVERR_BAD_DTYPE;
  const int64_t K = pr.K;
  if (K < 1 || a->x.numel % K != 0 || a->norm_w.numel != K) return AMK_DEVERR_BAD_PARAMS;
  if (a->w.rank != 3 || a->w.shape[1] != 3 || a->w.shape[2] != K || !a->w.contiguous) return AMK_DEVERR_BAD_PARAMS;
  a->K = K;
  a->rows = a->x.numel / K;
  a->inter = a->w.shape[0];
  if (a->out.numel != a->rows * K || !a->out.contiguous) return AMK_DEVERR_BAD_PARAMS;
  if (pr.n_off < 0 || pr.N_tile < 1 || static_cast<int64_t>(pr.n_off) + pr.N_tile > a->inter)
    return AMK_DEVERR_BAD_PARAMS;
  a->n_begin = pr.n_off;
  a->n_end = static_cast<int64_t>(pr.n_off) + pr.N_tile;
  a->eps = pr.eps;
  return AMK_DEVERR_NONE;
}

/// CPU reference of RMSNORM_MLP_FOLD (atomic fp32 adds into out).
int32_t mlp_fold_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
