// instructions/fused.cuh: FUSED (19) on the device: one GEMV tile whose x is built while it is
// staged (RMSNORM_GEMV: rmsnorm(x) * norm_w; SILU_MUL_GEMV*: silu(gate) * up, kept fp32) and whose
// epilogue adds the residual tile (GEMV_ADD, SILU_MUL_GEMV_ADD; y may be the residual itself:
// each element is read by the thread that then writes it).
#pragma once
#include "instructions/attention_tile.cuh"
#include "instructions/fused.h"
#include "instructions/gemv_core.cuh"
#include "instructions/mlp_fold.cuh"
#include "instructions/rope_append.cuh"

namespace amk::instructions {

/// FUSED, whole block.
AMK_DEVICE_NOINLINE int32_t fused_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  if (fused_recipe(inst) == kRecipeRopeAppend) return rope_append_run(p, inst, ctx);
  if (fused_recipe(inst) == kRecipeRopeAttention) return attention_tile_run(p, inst, ctx);
  if (fused_recipe(inst) == kRecipeMlpFold) return mlp_fold_run(p, inst, ctx);
  FusedArgs* const s_args = shared_args<FusedArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](FusedArgs* out) { return decode_fused(p, inst, out); }));
  const FusedArgs& a = *s_args;
  const int32_t pro = a.recipe == kRecipeRmsNormGemv ? kGemvRmsNorm : (a.has_aux ? kGemvSiluMul : kGemvPlain);
  return gemv_tile_block(a.mm, pro, a.has_aux ? a.aux : a.mm.x, a.eps, nullptr,
                         a.has_residual ? &a.residual : nullptr, ctx, a.has_copy ? &a.copy : nullptr);
}

}  // namespace amk::instructions
