/* vm/abi.h: the on-device C ABI (AMK_ABI_VERSION 0.2), plain old data shared by the host loader,
 * the CPU VM and the GPU kernels. Layouts match the original implementation on x86-64 so programs
 * and tools stay interchangeable; they are static_asserted below. Add fields only with a minor
 * version bump. tests/ir/abi_sync_test.cpp fails if an enum code or cap drifts from ir/. */
#ifndef AMK_VM_ABI_H
#define AMK_VM_ABI_H

#include <stdint.h>

#define AMK_ABI_VERSION_MAJOR 0
#define AMK_ABI_VERSION_MINOR 2

#define AMK_MAX_INPUTS 8
#define AMK_MAX_OUTPUTS 4
#define AMK_MAX_WAITS 8
#define AMK_MAX_RANK 4

typedef enum amk_dtype {
  AMK_DTYPE_F32 = 0, AMK_DTYPE_F16 = 1, AMK_DTYPE_BF16 = 2, AMK_DTYPE_F8E4M3 = 3, AMK_DTYPE_F8E5M2 = 4,
  AMK_DTYPE_I32 = 5, AMK_DTYPE_I8 = 6, AMK_DTYPE_I4 = 7, AMK_DTYPE_U8 = 8, AMK_DTYPE_BOOL = 9,
  AMK_DTYPE_COUNT = 10
} amk_dtype_t;

typedef enum amk_memspace {
  AMK_MEM_HBM = 0, AMK_MEM_GLOBAL_SCRATCH = 1, AMK_MEM_SMEM = 2, AMK_MEM_REGISTER = 3, AMK_MEM_COUNT = 4
} amk_memspace_t;

typedef enum amk_buffer_kind {
  AMK_KIND_WEIGHT = 0, AMK_KIND_ACTIVATION = 1, AMK_KIND_KV_CACHE = 2, AMK_KIND_IO_INPUT = 3,
  AMK_KIND_IO_OUTPUT = 4, AMK_KIND_CONST = 5, AMK_KIND_COUNT = 6
} amk_buffer_kind_t;

typedef enum amk_opcode {
#define AMK_OPCODE(Name, SPEC, code, min_in, max_in, outs, req) AMK_OP_##SPEC = code,
#include "ir/opcodes.def"
#undef AMK_OPCODE
  AMK_OP_COUNT = 20
} amk_opcode_t;

/* flags bits */
#define AMK_FLAG_CAUSAL 0x1
#define AMK_FLAG_PARTIAL_WRITE 0x2
/* Step-relative params (docs/OPCODES.md "Decode steps"): the instruction table never changes
 * between tokens; these bits make a param follow amk_step_t.pos instead.
 * STEP_POS: the effective pos is params.pos + step->pos (ROPE, KV_APPEND).
 * STEP_KV:  the attention window is [kv_start, min(kv_start + kv_len, step->pos + 1)). */
#define AMK_FLAG_STEP_POS 0x4
#define AMK_FLAG_STEP_KV 0x8
/* ACCUMULATE: the task adds its result into its F32 output with atomic adds (docs/FOLD.md). */
#define AMK_FLAG_ACCUMULATE 0x10
#define AMK_FLAG_RECIPE_SHIFT 16

/* Opcode parameters: 19 int32 fields in this order, then eps, scale, theta (88 bytes). */
typedef struct amk_params {
  int32_t K, N, M, N_tile, M_tile, n_off, m_off, hidden, vocab, head_dim, n_heads, n_kv_heads, kv_start,
      kv_len, pos, qdtype, flags, group, dim;
  float eps, scale, theta;
} amk_params_t;

/* A resolved tensor (96 bytes). Strides are in elements. */
typedef struct amk_buffer {
  void* ptr;
  int64_t numel;
  int32_t rank;
  int32_t dtype;
  int32_t space;
  int32_t pad;
  int64_t shape[AMK_MAX_RANK];
  int64_t stride[AMK_MAX_RANK];
} amk_buffer_t;

/* One task (224 bytes). Buffer and counter fields are indices into amk_program_t's tables. */
typedef struct amk_instruction {
  int32_t op;
  int32_t n_inputs;
  int32_t n_outputs;
  int32_t n_waits;
  int32_t inputs[AMK_MAX_INPUTS];
  int32_t outputs[AMK_MAX_OUTPUTS];
  int32_t wait_counter[AMK_MAX_WAITS];
  uint32_t wait_threshold[AMK_MAX_WAITS];
  int32_t out_counter;
  int32_t sm;
  amk_params_t params;
} amk_instruction_t;

typedef uint32_t amk_counter_t;

/* Per-launch values the host writes before each step (never the instruction table).
 * Thresholds are scaled by `epoch` when counters are not reset between launches. */
typedef struct amk_step {
  int32_t pos;       /* decode position of this step */
  uint32_t epoch;    /* launches since the counters were last zeroed, starting at 1 */
  int32_t reserved[6];
} amk_step_t;

/* Where the device reports an impossible state: the first error wins. */
typedef struct amk_error_slot {
  int32_t code;     /* amk_device_error_t; 0 = none */
  int32_t task;     /* instruction index */
  int32_t detail;
  int32_t pad;
} amk_error_slot_t;

typedef enum amk_device_error {
  AMK_DEVERR_NONE = 0, AMK_DEVERR_UNKNOWN_OPCODE = 1, AMK_DEVERR_BAD_PARAMS = 2, AMK_DEVERR_BAD_DTYPE = 3,
  AMK_DEVERR_INDEX_OUT_OF_RANGE = 4, AMK_DEVERR_COUNTER_OVERFLOW = 5
} amk_device_error_t;

/* The resolved program a VM executes. sm_queue[sm_queue_offsets[s] .. sm_queue_offsets[s+1]) lists
 * the instruction indices of worker s in execution order. */
typedef struct amk_program {
  amk_buffer_t* buffers;
  amk_counter_t* counters;
  /* producers per counter: a wait (c, t) in launch `epoch` is met when
   * counters[c] >= (epoch - 1) * counter_producers[c] + t, so counters need no reset between steps */
  uint32_t* counter_producers;
  amk_instruction_t* instructions;
  int32_t* sm_queue_offsets;
  int32_t* sm_queue;
  void* scratch;
  int32_t* abort_flag;
  amk_step_t* step;
  amk_error_slot_t* error;
  int64_t scratch_bytes;
  int32_t n_buffers;
  int32_t n_counters;
  int32_t n_instructions;
  int32_t n_sms;
} amk_program_t;

#ifdef __cplusplus
static_assert(sizeof(amk_params_t) == 88, "amk_params_t layout drifted from ABI 0.2");
static_assert(sizeof(amk_buffer_t) == 96, "amk_buffer_t layout drifted from ABI 0.2");
static_assert(sizeof(amk_instruction_t) == 224, "amk_instruction_t layout drifted from ABI 0.2");
static_assert(sizeof(amk_counter_t) == 4, "counters are uint32");
#endif

#endif /* AMK_VM_ABI_H */
