// instructions/device_dispatch.cuh: opcode -> device micro-kernel. With cpu_dispatch.cpp one of
// the two places that list every opcode (the static_asserts fail when opcodes.def grows). Also
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
#include "instructions/gemv_like.h"
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

static_assert(AMK_OP_COUNT == 20, "a new opcode needs a device micro-kernel in AMK_DEVICE_OPCODES");

/// Every opcode the device runs, with its micro-kernel. device_execute's switch and
/// kDeviceOpcodes both expand this one list, so the opcode table a GPU VM exports (the CUDA/HIP
/// parity test, tests/vm/gpu_opcodes_test.cpp) is exactly the set of cases the switch has.
#define AMK_DEVICE_OPCODES(X)                         \
  X(AMK_OP_NOP, nop_run)                              \
  X(AMK_OP_COPY, copy_run)                            \
  X(AMK_OP_EMBED, embed_run)                          \
  X(AMK_OP_RMSNORM, rms_norm_run)                     \
  X(AMK_OP_LAYERNORM, layer_norm_run)                 \
  X(AMK_OP_GEMV_TILE, gemv_tile_run)                  \
  X(AMK_OP_GEMM_TILE, gemm_tile_run)                  \
  X(AMK_OP_ATTENTION_TILE, attention_tile_run)        \
  X(AMK_OP_ROPE, rope_run)                            \
  X(AMK_OP_SILU_MUL, silu_mul_run)                    \
  X(AMK_OP_GELU, gelu_run)                            \
  X(AMK_OP_ADD, add_run)                              \
  X(AMK_OP_MUL, mul_run)                              \
  X(AMK_OP_DEQUANT, dequant_run)                      \
  X(AMK_OP_SOFTMAX, softmax_run)                      \
  X(AMK_OP_ALLREDUCE_SHARD, allreduce_shard_run)      \
  X(AMK_OP_KV_APPEND, kv_append_run)                  \
  X(AMK_OP_SAMPLE_ARGMAX, sample_argmax_run)          \
  X(AMK_OP_ATTENTION_COMBINE, attention_combine_run)  \
  X(AMK_OP_FUSED, fused_run)

/// The opcodes device_execute handles, in list order.
inline constexpr int32_t kDeviceOpcodes[] = {
#define AMK_DEVICE_OPCODE_CODE(op, fn) op,
    AMK_DEVICE_OPCODES(AMK_DEVICE_OPCODE_CODE)
#undef AMK_DEVICE_OPCODE_CODE
};

/// True when kDeviceOpcodes holds every code in [0, AMK_OP_COUNT) exactly once.
constexpr bool device_opcodes_complete() {
  if (sizeof(kDeviceOpcodes) / sizeof(kDeviceOpcodes[0]) != AMK_OP_COUNT) return false;
  for (int32_t code = 0; code < AMK_OP_COUNT; ++code) {
    int seen = 0;
    for (int32_t op : kDeviceOpcodes) seen += op == code ? 1 : 0;
    if (seen != 1) return false;
  }
  return true;
}
// Evaluated in every compile pass (host, each CUDA arch, each AMD arch), so a vendor- or
// arch-conditional list that drops an opcode stops that build.
static_assert(device_opcodes_complete(), "every opcode of ir/opcodes.def needs exactly one entry in AMK_DEVICE_OPCODES");

/// Run `inst` with the whole block. Returns a block-uniform amk_device_error_t.
AMK_DEVICE int32_t device_execute(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  switch (inst.op) {
#define AMK_DEVICE_OPCODE_CASE(op, fn) \
  case op: return fn(p, inst, ctx);
    AMK_DEVICE_OPCODES(AMK_DEVICE_OPCODE_CASE)
#undef AMK_DEVICE_OPCODE_CASE
    default: return AMK_DEVERR_UNKNOWN_OPCODE;
  }
}

/// The weight bytes a GEMV-like task streams ([*ptr, *ptr + *bytes)); bytes = 0 for other ops or
/// operands that do not decode (the task itself will report those).
AMK_DEVICE void device_weight_range(const amk_program_t& p, const amk_instruction_t& inst, const void** ptr,
                                    uint64_t* bytes) {
  *ptr = nullptr;
  *bytes = 0;
  MatmulArgs mm;
  if (decode_gemv_like(p, inst, &mm)) gemv_weight_range(mm, ptr, bytes);
}

}  // namespace amk::instructions
