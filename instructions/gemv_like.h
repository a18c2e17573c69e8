// instructions/gemv_like.h: the matmul tile of any weight-streaming instruction (GEMV_TILE,
// GEMM_TILE, FUSED), for the code that plans around weights rather than runs the task: the GPU
// kernel's L2 prefetch and weight ring, and the executor sizing that ring. Host and device.
#pragma once
#include "instructions/fused.h"
#include "instructions/gemv_tile.h"

namespace amk::instructions {

/// The tile of a GEMV-like `inst` into `*mm`; false for other opcodes and for operands that do
/// not decode (the task itself reports those when it runs).
AMK_HD bool decode_gemv_like(const amk_program_t& p, const amk_instruction_t& inst, MatmulArgs* mm) {
  if (inst.op == AMK_OP_GEMV_TILE || inst.op == AMK_OP_GEMM_TILE) {
    GemvTileArgs a;
    if (decode_gemv_tile(p, inst, &a) != AMK_DEVERR_NONE) return false;
    *mm = a.mm;
    return true;
  }
  if (inst.op == AMK_OP_FUSED) {
    FusedArgs a;
    if (decode_fused(p, inst, &a) != AMK_DEVERR_NONE) return false;
    *mm = a.mm;
    return true;
  }
  return false;
}

}  // namespace amk::instructions
