// instructions/device_dispatch.cuh: opcode -> device micro-kernel. With cpu_dispatch.cpp one of
// the two places that list every opcode (the static_assert fails when opcodes.def grows). Also
// says which weight bytes a task will stream, so the kernel can warm L2 before the task's wait:
// weights never depend on activations, so that prefetch is legal before the counters are met.
#pragma once
#include "instructions/add.cuh"
#include "instructions/allreduce_shard.cuh"
#include "instructions/attention_combine.cuh"
#include "instructions/attention_tile.cuh"
#include "instructions/copy.cuh"
#include "instructions/dequant.cuh"
#include "instructions/embed.cuh"
#include "instructions/fused.cuh"
#include "instructions/gelu.cuh"
#include "instructions/gemm_tile.cuh"
#include "instructions/gemv_tile.cuh"
#include "instructions/kv_append.cuh"
#include "instructions/layer_norm.cuh"
#include "instructions/mul.cuh"
#include "instructions/nop.cuh"
#include "instructions/rms_norm.cuh"
#include "instructions/rope.cuh"
#include "instructions/sample_argmax.cuh"
#include "instructions/silu_mul.cuh"
#include "instructions/softmax.cuh"

namespace amk::instructions {

static_assert(AMK_OP_COUNT == 20, "a new opcode needs a device micro-kernel in this switch");

/// Run `inst` with the whole block. Returns a block-uniform amk_device_error_t.
AMK_DEVICE int32_t device_execute(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  switch (inst.op) {
    case AMK_OP_NOP: return nop_run(p, inst, ctx);
    case AMK_OP_COPY: return copy_run(p, inst, ctx);
    case AMK_OP_EMBED: return embed_run(p, inst, ctx);
    case AMK_OP_RMSNORM: return rms_norm_run(p, inst, ctx);
    case AMK_OP_LAYERNORM: return layer_norm_run(p, inst, ctx);
    case AMK_OP_GEMV_TILE: return gemv_tile_run(p, inst, ctx);
    case AMK_OP_GEMM_TILE: return gemm_tile_run(p, inst, ctx);
    case AMK_OP_ATTENTION_TILE: return attention_tile_run(p, inst, ctx);
    case AMK_OP_ROPE: return rope_run(p, inst, ctx);
    case AMK_OP_SILU_MUL: return silu_mul_run(p, inst, ctx);
    case AMK_OP_GELU: return gelu_run(p, inst, ctx);
    case AMK_OP_ADD: return add_run(p, inst, ctx);
    case AMK_OP_MUL: return mul_run(p, inst, ctx);
    case AMK_OP_DEQUANT: return dequant_run(p, inst, ctx);
    case AMK_OP_SOFTMAX: return softmax_run(p, inst, ctx);
    case AMK_OP_ALLREDUCE_SHARD: return allreduce_shard_run(p, inst, ctx);
    case AMK_OP_KV_APPEND: return kv_append_run(p, inst, ctx);
    case AMK_OP_SAMPLE_ARGMAX: return sample_argmax_run(p, inst, ctx);
    case AMK_OP_ATTENTION_COMBINE: return attention_combine_run(p, inst, ctx);
    case AMK_OP_FUSED: return fused_run(p, inst, ctx);
    default: return AMK_DEVERR_UNKNOWN_OPCODE;
  }
}

/// The weight bytes a GEMV-like task streams ([*ptr, *ptr + *bytes)); bytes = 0 for other ops or
/// operands that do not decode (the task itself will report those).
AMK_DEVICE void device_weight_range(const amk_program_t& p, const amk_instruction_t& inst, const void** ptr,
                                    uint64_t* bytes) {
  *ptr = nullptr;
  *bytes = 0;
  if (inst.op == AMK_OP_GEMV_TILE || inst.op == AMK_OP_GEMM_TILE) {
    GemvTileArgs a;
    if (decode_gemv_tile(p, inst, &a) == AMK_DEVERR_NONE) gemv_weight_range(a.mm, ptr, bytes);
  } else if (inst.op == AMK_OP_FUSED) {
    FusedArgs a;
    if (decode_fused(p, inst, &a) == AMK_DEVERR_NONE) gemv_weight_range(a.mm, ptr, bytes);
  }
}

}  // namespace amk::instructions
