// instructions/fused.cuh: FUSED (19) on the device: one GEMV tile whose x is built while it is
// staged (RMSNORM_GEMV: rmsnorm(x) * norm_w; SILU_MUL_GEMV*: silu(gate) * up, kept fp32) and whose
// epilogue adds the residual tile (GEMV_ADD, SILU_MUL_GEMV_ADD; y may be the residual itself:
// each element is read by the thread that then writes it). ATTENTION_GEMV_ADD off the weight
// stream runs as its two halves (attention_gemv_attend, then this GEMV code) where the including
// kernel defines AMK_ATTENTION_GEMV_ON_DEVICE (the attention kernel, and HIP's); on the stream,
// attention_row.cuh stages its x. Elsewhere recipe 9 is BAD_PARAMS: the executor launches the
// attention kernel for every program that has it, and the generic path's code in the default
// kernel moved ptxas' allocation of it (spill stores 136 -> 156 B, sm_90a). The step-position
// GEMVs (recipes 10-12) run step_gemv_run off the stream, except in the CUDA attention kernel
// (AMK_NO_STEP_STREAM), where they are BAD_PARAMS and the executor refuses such a program.
#pragma once
#include "instructions/attention_gemv.h"
#include "instructions/attention_tile.cuh"
#include "instructions/fused.h"
#include "instructions/gemv_core.cuh"
#include "instructions/mlp_fold.cuh"
#include "instructions/rope_append.cuh"

namespace amk::instructions {

#ifdef AMK_ATTENTION_GEMV_ON_DEVICE
/// ATTENTION_GEMV_ADD off the weight stream (any layout, any device), its attention half: thread 0
/// splits the task (split_attention_gemv) into a table at the end of the work area, beside the
/// attention row; ATTENTION_TILE's micro-kernel then runs the ROPE_ATTENTION of every head into the
/// row (shared memory, q's dtype) on the rest of the work area. *gemv_p, *gemv_inst and *gemv_ctx
/// are then the GEMV_ADD of the row, which fused_run runs as its own GEMV recipes (one copy of
/// that code in the kernel). BAD_PARAMS when the work area cannot hold them (the executor sizes it:
/// attention_gemv_tail_floats). Whole block.
AMK_DEVICE_NOINLINE int32_t attention_gemv_attend(const amk_program_t& p, const amk_instruction_t& inst,
                                                  const DeviceCtx& ctx, const amk_program_t** gemv_p,
                                                  const amk_instruction_t** gemv_inst, DeviceCtx* gemv_ctx) {
  __shared__ int32_t s_rc;
  const int64_t elems = attention_gemv_row_elems(inst.params);
  const int64_t tail = attention_gemv_tail_floats(inst.params);
  if (elems == 0 || tail + 64 > ctx.work_floats) return AMK_DEVERR_BAD_PARAMS;  // uniform: the params
  const int64_t at = (ctx.work_floats - tail) & ~int64_t{7};  // 32-byte aligned, as the work area
  float* const row = ctx.s_work + at;
  auto* const split = reinterpret_cast<AttentionGemvSplit*>(row + (elems + 3) / 4 * 4);
  auto* const view = reinterpret_cast<amk_program_t*>(reinterpret_cast<unsigned char*>(split) +
                                                      (sizeof(AttentionGemvSplit) + 15) / 16 * 16);
  compute_barrier();  // the previous task's reads of the work area are done
  if (threadIdx.x == 0) s_rc = split_attention_gemv(p, inst, row, split, view);
  compute_barrier();
  const int32_t rc = s_rc;
  compute_barrier();  // every thread has read s_rc
  if (rc != AMK_DEVERR_NONE) return rc;
  *gemv_ctx = ctx;
  gemv_ctx->work_floats = static_cast<int32_t>(at);
  gemv_ctx->blob = nullptr;  // the halves decode their own instructions
  AMK_TRY_DEV(attention_tile_run(*view, split->attention, *gemv_ctx));
  compute_barrier();  // the row is whole
  *gemv_p = view;
  *gemv_inst = &split->gemv;
  return AMK_DEVERR_NONE;
}
#endif  // AMK_ATTENTION_GEMV_ON_DEVICE

#ifndef AMK_NO_STEP_STREAM
/// FUSED RMSNORM_GEMV_ROPE / _APPEND / _ROPE_APPEND off the weight stream: the tile with the step
/// bound (position, cache row) and the rotating epilogue. A function of its own: in fused_run,
/// the step's bind grew the persistent kernel's stack frame (616 -> 648 B, sm_90a), which every
/// program would pay (docs/PERFORMANCE.md row 185). Whole block.
AMK_DEVICE_NOINLINE int32_t step_gemv_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  FusedArgs* const s_args = shared_args<FusedArgs>();
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](FusedArgs* out) { return decode_fused_at_step(p, inst, out); },
                          [&](FusedArgs* out) { return bind_fused_step(p, inst, out); }));
  const FusedArgs& a = *s_args;
  return gemv_tile_block(a.mm, kGemvRmsNorm, a.aux, a.eps, nullptr, nullptr, ctx, nullptr, &a.step);
}
#endif  // AMK_NO_STEP_STREAM

/// FUSED, whole block.
AMK_DEVICE_NOINLINE int32_t fused_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  if (fused_recipe(inst) == kRecipeRopeAppend) return rope_append_run(p, inst, ctx);
  if (fused_recipe(inst) == kRecipeRopeAttention) return attention_tile_run(p, inst, ctx);
  if (fused_recipe(inst) == kRecipeMlpFold) return mlp_fold_run(p, inst, ctx);
#ifndef AMK_NO_STEP_STREAM
  if (recipe_is_step_gemv(fused_recipe(inst))) return step_gemv_run(p, inst, ctx);
#else
  // The attention kernel (persistent_kernel.cu, kStepGemvStream): its allocation took the plain
  // path's code badly too (spill stores 124 -> 308 B, sm_90a), and no lowering puts recipes 10-12
  // beside ATTENTION_GEMV_ADD (the groups exclude each other), so they are BAD_PARAMS there.
  if (recipe_is_step_gemv(fused_recipe(inst))) return AMK_DEVERR_BAD_PARAMS;
#endif  // AMK_NO_STEP_STREAM
  const amk_program_t* gp = &p;
  const amk_instruction_t* gi = &inst;
  DeviceCtx gc = ctx;
#ifdef AMK_ATTENTION_GEMV_ON_DEVICE
  if (fused_recipe(inst) == kRecipeAttentionGemvAdd) AMK_TRY_DEV(attention_gemv_attend(p, inst, ctx, &gp, &gi, &gc));
#endif  // AMK_ATTENTION_GEMV_ON_DEVICE (else decode_fused refuses recipe 9: BAD_PARAMS)
  FusedArgs* const s_args = shared_args<FusedArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, gc, [&](FusedArgs* out) { return decode_fused(*gp, *gi, out); }));
  const FusedArgs& a = *s_args;
  const int32_t pro = a.recipe == kRecipeRmsNormGemv ? kGemvRmsNorm : (a.has_aux ? kGemvSiluMul : kGemvPlain);
  return gemv_tile_block(a.mm, pro, a.has_aux ? a.aux : a.mm.x, a.eps, nullptr,
                         a.has_residual ? &a.residual : nullptr, gc, a.has_copy ? &a.copy : nullptr);
}

}  // namespace amk::instructions
