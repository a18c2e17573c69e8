// instructions/gemm_tile_ref.cpp: CPU reference of GEMM_TILE. Row by row like GEMV: the reference
// favours one code path over cache blocking (prefill is not its job).
#include "instructions/gemm_tile.h"

namespace amk::instructions {

int32_t gemm_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  GemmTileArgs a;
  AMK_TRY_DEV(decode_gemm_tile(prog, inst, &a));
  matmul_tile_ref(a.mm, a.has_bias ? &a.bias : nullptr);
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
