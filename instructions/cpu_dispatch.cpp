// instructions/cpu_dispatch.cpp: opcode -> CPU reference. One of the two places (with the GPU
// dispatch) that lists every opcode; the static_assert fails when opcodes.def grows.
#include "instructions/cpu_dispatch.h"

#include "instructions/add.h"
#include "instructions/allreduce_shard.h"
#include "instructions/attention_combine.h"
#include "instructions/attention_tile.h"
#include "instructions/copy.h"
#include "instructions/dequant.h"
#include "instructions/embed.h"
#include "instructions/fused.h"
#include "instructions/gelu.h"
#include "instructions/gemm_tile.h"
#include "instructions/gemv_tile.h"
#include "instructions/kv_append.h"
#include "instructions/layer_norm.h"
#include "instructions/mul.h"
#include "instructions/nop.h"
#include "instructions/rms_norm.h"
#include "instructions/rope.h"
#include "instructions/sample_argmax.h"
#include "instructions/silu_mul.h"
#include "instructions/softmax.h"

namespace amk::instructions {

static_assert(AMK_OP_COUNT == 20, "a new opcode needs a CPU reference in this switch");

int32_t cpu_execute(const amk_program_t& prog, const amk_instruction_t& inst) {
  switch (inst.op) {
    case AMK_OP_NOP: return nop_ref(prog, inst);
    case AMK_OP_COPY: return copy_ref(prog, inst);
    case AMK_OP_EMBED: return embed_ref(prog, inst);
    case AMK_OP_RMSNORM: return rms_norm_ref(prog, inst);
    case AMK_OP_LAYERNORM: return layer_norm_ref(prog, inst);
    case AMK_OP_GEMV_TILE: return gemv_tile_ref(prog, inst);
    case AMK_OP_GEMM_TILE: return gemm_tile_ref(prog, inst);
    case AMK_OP_ATTENTION_TILE: return attention_tile_ref(prog, inst);
    case AMK_OP_ROPE: return rope_ref(prog, inst);
    case AMK_OP_SILU_MUL: return silu_mul_ref(prog, inst);
    case AMK_OP_GELU: return gelu_ref(prog, inst);
    case AMK_OP_ADD: return add_ref(prog, inst);
    case AMK_OP_MUL: return mul_ref(prog, inst);
    case AMK_OP_DEQUANT: return dequant_ref(prog, inst);
    case AMK_OP_SOFTMAX: return softmax_ref(prog, inst);
    case AMK_OP_ALLREDUCE_SHARD: return allreduce_shard_ref(prog, inst);
    case AMK_OP_KV_APPEND: return kv_append_ref(prog, inst);
    case AMK_OP_SAMPLE_ARGMAX: return sample_argmax_ref(prog, inst);
    case AMK_OP_ATTENTION_COMBINE: return attention_combine_ref(prog, inst);
    case AMK_OP_FUSED: return fused_ref(prog, inst);
    default: return AMK_DEVERR_UNKNOWN_OPCODE;
  }
}

const char* device_error_name(int32_t code) {
  switch (code) {
    case AMK_DEVERR_NONE: return "NONE";
    case AMK_DEVERR_UNKNOWN_OPCODE: return "UNKNOWN_OPCODE";
    case AMK_DEVERR_BAD_PARAMS: return "BAD_PARAMS";
    case AMK_DEVERR_BAD_DTYPE: return "BAD_DTYPE";
    case AMK_DEVERR_INDEX_OUT_OF_RANGE: return "INDEX_OUT_OF_RANGE";
    case AMK_DEVERR_COUNTER_OVERFLOW: return "COUNTER_OVERFLOW";
    default: return "UNKNOWN_ERROR";
  }
}

}  // namespace amk::instructions
