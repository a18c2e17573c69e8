// instructions/task_blob.h: a task's operands decoded ahead of time, for the GPU VM. Decoding on the
// device is a serial chain of dependent loads from the buffer table (thread 0, several microseconds
// per task under load); the GPU executor instead decodes every task once on the host, against the
// device's buffer table, into a fixed-size blob per queue slot, and the kernel copies the blob to
// shared memory together with the instruction (one round trip for the whole block). The blob's
// tag names the Args type it holds, so a micro-kernel only uses a blob of its own Args type
// (decode_once) and decodes on the device otherwise: a blob is an optimisation, never a source of
// errors. Operands that depend on the step (position, KV window) are bound on the device after the
// copy (bind_*_step, the same code the full decode runs). Host and device.
#pragma once
#include <string.h>

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
#include "instructions/gemv_like.h"
#include "instructions/gemv_tile.h"
#include "instructions/kv_append.h"
#include "instructions/layer_norm.h"
#include "instructions/mul.h"
#include "instructions/rms_norm.h"
#include "instructions/rope.h"
#include "instructions/rope_append.h"
#include "instructions/sample_argmax.h"
#include "instructions/silu_mul.h"
#include "instructions/softmax.h"

namespace amk::instructions {

/// Ops whose operands the host pre-decodes: (opcode, Args type, the decode without step-dependent
/// parts). The device micro-kernel of each op must use exactly this Args type.
#define AMK_TASK_BLOB_OPS(X)                                       \
  X(AMK_OP_COPY, CopyArgs, decode_copy)                            \
  X(AMK_OP_EMBED, EmbedArgs, decode_embed)                         \
  X(AMK_OP_RMSNORM, RmsNormArgs, decode_rms_norm)                  \
  X(AMK_OP_LAYERNORM, LayerNormArgs, decode_layer_norm)            \
  X(AMK_OP_GEMV_TILE, GemvTileArgs, decode_gemv_tile)              \
  X(AMK_OP_GEMM_TILE, GemmTileArgs, decode_gemm_tile)              \
  X(AMK_OP_ATTENTION_TILE, AttentionTileArgs, decode_attention_tile_static) \
  X(AMK_OP_ROPE, RopeArgs, decode_rope_static)                     \
  X(AMK_OP_SILU_MUL, SiluMulArgs, decode_silu_mul)                 \
  X(AMK_OP_GELU, GeluArgs, decode_gelu)                            \
  X(AMK_OP_ADD, AddArgs, decode_add)                               \
  X(AMK_OP_MUL, MulArgs, decode_mul)                               \
  X(AMK_OP_DEQUANT, DequantArgs, decode_dequant)                   \
  X(AMK_OP_SOFTMAX, SoftmaxArgs, decode_softmax)                   \
  X(AMK_OP_ALLREDUCE_SHARD, AllreduceShardArgs, decode_allreduce_shard) \
  X(AMK_OP_KV_APPEND, KvAppendArgs, decode_kv_append_static)       \
  X(AMK_OP_SAMPLE_ARGMAX, SampleArgmaxArgs, decode_sample_argmax)  \
  X(AMK_OP_ATTENTION_COMBINE, AttentionCombineArgs, decode_attention_combine) \
  X(AMK_OP_FUSED, FusedArgs, decode_fused)

/// The Args type a blob holds: a tag per type (GEMV_TILE and GEMM_TILE share GemvTileArgs, so
/// tags are per type; the kernel also checks that a blob was made for the task's opcode). Types
/// not listed have tag -1 and never match a blob. GemvPlan is the weight stream's plan.
#define AMK_TASK_BLOB_TYPES(X)                                                                  \
  X(1, CopyArgs) X(2, EmbedArgs) X(3, RmsNormArgs) X(4, LayerNormArgs) X(5, GemvTileArgs)       \
  X(6, AttentionTileArgs) X(7, RopeArgs) X(8, SiluMulArgs) X(9, GeluArgs) X(10, AddArgs)        \
  X(11, MulArgs) X(12, DequantArgs) X(13, SoftmaxArgs) X(14, AllreduceShardArgs)                \
  X(15, KvAppendArgs) X(16, SampleArgmaxArgs) X(17, AttentionCombineArgs) X(18, FusedArgs)      \
  X(19, GemvPlan) X(20, RopeAppendArgs)

template <typename Args>
struct TaskBlobTag {
  static constexpr int32_t value = -1;
};
#define AMK_TASK_BLOB_TAG(tag, Args)         \
  template <>                                \
  struct TaskBlobTag<Args> {                 \
    static constexpr int32_t value = tag;    \
  };
AMK_TASK_BLOB_TYPES(AMK_TASK_BLOB_TAG)
#undef AMK_TASK_BLOB_TAG

/// The blob's first 16 bytes; the Args object follows.
struct TaskBlobHeader {
  int32_t tag;    ///< TaskBlobTag of the Args that follow, or -1: no blob (decode on the device)
  int32_t op;     ///< the opcode it was decoded for
  int32_t bytes;  ///< sizeof(Args)
  /// 0 as the host writes it. The persistent kernel's loader sets 1 + the return code of the
  /// step-dependent bind when it binds its staged copy of an AttentionTileArgs ahead of the
  /// compute warps (vm/cuda/persistent_kernel.cu, prebind_task); the micro-kernel then runs on
  /// that copy instead of decode_once's.
  int32_t bound;
};

/// Bytes per blob: the header and the largest Args, rounded up to 16.
constexpr int64_t task_blob_bytes() {
  int64_t m = 0;
#define AMK_TASK_BLOB_SIZE(tag, Args) m = m > static_cast<int64_t>(sizeof(Args)) ? m : static_cast<int64_t>(sizeof(Args));
  AMK_TASK_BLOB_TYPES(AMK_TASK_BLOB_SIZE)
#undef AMK_TASK_BLOB_SIZE
  return (static_cast<int64_t>(sizeof(TaskBlobHeader)) + m + 15) / 16 * 16;
}
inline constexpr int64_t kTaskBlobBytes = task_blob_bytes();

/// Decode `inst` with `decode` into an Args and write it behind a header of its tag into `blob`.
template <typename Args, typename Decode>
AMK_HD int32_t write_task_blob(const amk_program_t& p, const amk_instruction_t& inst, Decode decode,
                               unsigned char* blob) {
  Args a;
  AMK_TRY_DEV(decode(p, inst, &a));
  const TaskBlobHeader h{TaskBlobTag<Args>::value, inst.op, static_cast<int32_t>(sizeof(Args)), 0};
  memcpy(blob + sizeof h, &a, sizeof a);
  memcpy(blob, &h, sizeof h);
  return AMK_DEVERR_NONE;
}

/// Decode `inst` into `blob` (kTaskBlobBytes): the header and the op's Args without its
/// step-dependent parts. Returns the decode's error (then the header's tag is -1 and the task
/// decodes on the device, which reports the error by name), or BAD_OPCODE for ops without blobs.
AMK_HD int32_t predecode_task(const amk_program_t& p, const amk_instruction_t& inst, unsigned char* blob) {
  const TaskBlobHeader none{-1, inst.op, 0, 0};
  memcpy(blob, &none, sizeof none);
  if (inst.op == AMK_OP_FUSED && fused_recipe(inst) == kRecipeRopeAppend)  // the non-GEMV recipes
    return write_task_blob<RopeAppendArgs>(p, inst, decode_rope_append_static, blob);
  if (inst.op == AMK_OP_FUSED && fused_recipe(inst) == kRecipeRopeAttention)
    return write_task_blob<AttentionTileArgs>(p, inst, decode_attention_tile_static, blob);
  switch (inst.op) {
#define AMK_TASK_BLOB_CASE(op, Args, fn) \
  case op: return write_task_blob<Args>(p, inst, fn, blob);
    AMK_TASK_BLOB_OPS(AMK_TASK_BLOB_CASE)
#undef AMK_TASK_BLOB_CASE
    default: return AMK_DEVERR_UNKNOWN_OPCODE;
  }
}

/// Ask FUSED ROPE_ATTENTION in a blob that predecode_task wrote to take its Tensor::load prologue
/// (AttentionTileArgs::generic_prologue; a measuring knob). Returns false, the blob unchanged, for
/// any other blob.
inline bool set_generic_rope_prologue(unsigned char* blob) {
  TaskBlobHeader h;
  memcpy(&h, blob, sizeof h);
  if (h.tag != TaskBlobTag<AttentionTileArgs>::value || h.bytes != static_cast<int32_t>(sizeof(AttentionTileArgs)))
    return false;
  AttentionTileArgs a;
  memcpy(&a, blob + sizeof h, sizeof a);
  if (!a.rope_fresh) return false;
  a.generic_prologue = true;
  memcpy(blob + sizeof h, &a, sizeof a);
  return true;
}

/// A blob of the weight stream's plan for a streamed GEMV-like task.
inline void make_plan_blob(const GemvPlan& plan, int32_t op, unsigned char* blob) {
  const TaskBlobHeader h{TaskBlobTag<GemvPlan>::value, op, static_cast<int32_t>(sizeof(GemvPlan)), 0};
  memcpy(blob, &h, sizeof h);
  memcpy(blob + sizeof h, &plan, sizeof plan);
}

}  // namespace amk::instructions
