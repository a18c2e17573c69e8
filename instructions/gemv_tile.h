// instructions/gemv_tile.h: GEMV_TILE (5) y[r, n] = sum_k x[r, k] * W[n, k] (+ bias[n]) for the
// column tile n in [n_off, n_off + N_tile), every row r. W is [N_out, K] (x @ W.T); columns outside
// the tile are not touched, so disjoint tiles of one y can run on different SMs.
#pragma once
#include "instructions/common/matmul.h"

namespace amk::instructions {

/// Decoded GEMV_TILE operands.
struct GemvTileArgs {
  MatmulArgs mm;
  Tensor bias;
  bool has_bias = false;
};

/// BAD_PARAMS for a K that does not split x and W, a y that is not [rows, N_out], a tile outside
/// [0, N_out) or a bias that is not [N_out]; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_gemv_tile(const amk_program_t& p, const amk_instruction_t& inst, GemvTileArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 3, 1));
  Tensor x, w, y;
  AMK_TRY_DEV(bind_input(p, inst, 0, &x));
  AMK_TRY_DEV(bind_input(p, inst, 1, &w));
  AMK_TRY_DEV(bind_output(p, inst, 0, &y));
  const amk_params_t& pr = inst.params;
  AMK_TRY_DEV(matmul_bind(x, w, y, pr.K, pr.n_off, pr.N_tile, &a->mm));
  a->has_bias = inst.n_inputs == 3;
  if (a->has_bias) {
    AMK_TRY_DEV(bind_input(p, inst, 2, &a->bias));
    AMK_TRY_DEV(matmul_check_addend(a->bias, a->mm.n_out));
  }
  return AMK_DEVERR_NONE;
}

/// CPU reference of GEMV_TILE.
int32_t gemv_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst);

/// The tile of a decoded GEMV / GEMM: dots, plus bias[n] when `bias` is non-null (CPU).
void matmul_tile_ref(const MatmulArgs& mm, const Tensor* bias);

}  // namespace amk::instructions
