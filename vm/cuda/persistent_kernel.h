// vm/cuda/persistent_kernel.h: the seam between the host executor (plain C++) and the persistent
// kernel's translation unit (nvcc / hipcc). One block per worker walks its queue: wait on the
// task's counters (acquire), run the micro-kernel with the whole block, signal (release). The
// host must verify co-residency (kernel_resources) before kernel_launch: a persistent grid whose
// blocks are not all resident can deadlock.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "targets/gpu.h"  // first: the device runtime (HIP: device memcpy) before any AMK_HD code
#include "instructions/block_geometry.h"
#include "instructions/task_blob.h"
#include "ir/status.h"
#include "vm/abi.h"
#include "vm/trace.h"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side (targets/gpu_vendor.h)

/// One queue slot's share of the weight stream: `bytes` from `src`, in chunks of `chunk_bytes`
/// (whole weight rows, at most one ring slot); bytes = 0 when the task reads no weights from the
/// ring. 16 bytes, so thread 0 reads an entry with one load.
struct WeightStreamEntry {
  const void* src;
  uint32_t bytes;
  uint32_t chunk_bytes;
};

/// Threads per worker block (instructions/block_geometry.h: compute warps and the loader warp).
using instructions::kBlockThreads;

/// Most tasks the loader warp stages ahead of the compute warps (static shared memory: one
/// instruction and one operand blob each).
inline constexpr int kMaxStagedTasks = 4;

/// Everything one launch needs, passed by value (device pointers only).
/// Most workers whose queue bounds travel in KernelArgs (KernelArgs::queue_offsets); a launch of
/// more workers reads them from prog.sm_queue_offsets. 160 covers today's GPUs (H100 / H200 132
/// SMs, B200 148) and keeps the parameter block under 1.5 KiB, far inside the 4 KiB launch limit.
inline constexpr int kMaxParamWorkers = 160;
/// SM ids the first-queue table after KernelArgs::sm_claims covers (H100 / H200: 0..131); a block
/// on a higher id starts its claim at its table entry.
inline constexpr int kMaxSmIds = 256;

struct KernelArgs {
  amk_program_t prog;       ///< device tables; abort_flag is host-mapped; step / error are device memory
  /// The launch's step block by value: the first thing every block needs, so it comes with the
  /// launch instead of one global round trip at the start of each block (prog.step holds a copy).
  amk_step_t step;
  int32_t* progress;        ///< [workers] tasks completed this launch (device memory)
  int32_t work_floats;      ///< the work area at the aligned dynamic base, in floats
  int32_t prefetch_depth;   ///< > 0: warm L2 with a task's weights when it is staged, if the ring is off
  /// Tasks the loader stages ahead of the compute warps, 1..kMaxStagedTasks (instruction,
  /// operands, counter wait): the schedule's pipelining_depth.
  int32_t staged_tasks;
  TaskTiming* trace;        ///< [queue length] per queue slot, or nullptr: tracing off (one branch)
  /// [workers x chunk_trace_per_worker] the weight stream's chunks (vm/trace.h), or nullptr.
  ChunkTiming* chunk_trace;
  int32_t chunk_trace_per_worker;
  /// [workers] the SM each block started on (gpu::sm_id), or nullptr: traced launches only.
  int32_t* worker_sm;
  int32_t ring_slots;       ///< weight-ring slots after the work area (0 = off; sm_90 builds only)
  int32_t ring_slot_bytes;  ///< bytes per slot, a multiple of 128
  int32_t ring_offset;      ///< bytes from the aligned dynamic base to the ring (dyn_smem_layout.h)
  /// Most chunks the ring holds unconsumed while a streamed task runs (0: every slot): slots past
  /// it fill only while the SM waits or runs a task without weights (Loader::ring_limit).
  int32_t ring_streaming_cap;
  /// Most chunks the ring holds unconsumed while no streamed task runs (0: every slot).
  int32_t ring_idle_cap;
  /// [queue length] per queue slot: the weight bytes that task takes from the ring, or nullptr
  /// (ring off). Built by the host with instructions::gemv_stream_chunk_bytes().
  const WeightStreamEntry* stream;
  /// [queue length] prog.instructions[prog.sm_queue[q]] for every queue slot q, or nullptr (the
  /// kernel then goes through sm_queue: two dependent loads per staged task instead of one).
  const amk_instruction_t* queue_insts;
  /// [queue length x instructions::kTaskBlobBytes] each task's host-decoded operands (device
  /// pointers; a GemvPlan for streamed tasks), or nullptr: every task decodes on the device.
  const unsigned char* blobs;
  /// Pause between two polls of a counter (0: spin, pausing only in long waits). Fewer polls
  /// leave the L2 slice that holds a hot counter to the producers' atomics and other traffic.
  uint32_t poll_sleep_ns;
  /// 1: the loader stages the task after next as soon as its slot is free, even while the next
  /// one still waits for its counters (the A/B knob AMK_STAGE_WHILE_POLLING=1 of
  /// docs/PERFORMANCE.md row 89); 0: it stages it only once the next task is published.
  int32_t stage_while_polling;
  /// When the loader polls the next task's counters: 1 (the default) once, then only after the
  /// task before it has finished; 0 at any time; 2 only after that task has finished. A poll is
  /// a relaxed load whose use stalls the loader's lane 0 for an L2 round trip, during which a
  /// freed ring slot waits for its refill; and while the task before runs, a next task that
  /// depends on it cannot be met anyway, while one that does not is usually met at the first
  /// poll. AMK_POLL_GATE=0 / 2 (measuring, docs/PERFORMANCE.md row 122).
  int32_t poll_gate;
  /// 1: queue_offsets holds prog.sm_queue_offsets[0 .. workers] (workers <= kMaxParamWorkers).
  /// A block's queue bounds then come with the launch: its loader can load its first task at once
  /// instead of after one global round trip for the bounds. That round trip did not show in the
  /// empty launch; the tokens' -0.6-0.8% came with the kernel's new register allocation
  /// (docs/PERFORMANCE.md row 129).
  int32_t queue_offsets_in_args;
  int32_t queue_offsets[kMaxParamWorkers + 1];
  /// 1: block b runs the queue of worker block_workers[b], a permutation of [0, workers) that the
  /// host checked (GpuOptions::block_workers or AMK_BLOCK_WORKERS, vm/cuda/block_workers.h): which queue runs on which SM, so that the
  /// heavier queues can go to the SMs that stream faster (docs/SM_BALANCE.md). 0: block b runs
  /// worker b's. Any permutation is correct, wherever the blocks land; correctness never rests
  /// on the SM a block got (gpu::sm_id).
  int32_t block_workers_in_args;
  uint8_t block_workers[kMaxParamWorkers];
  /// Non-null (SM balancing in a kernel built with AMK_SM_CLAIM, docs/SM_BALANCE.md): each block
  /// claims its queue when it starts, because the block -> SM placement moves between launches.
  /// Device memory: [workers] claims, then kMaxSmIds bytes, the queue a block on each SM id tries
  /// first (0xff: none; host: sm_first_queues). A block tries that queue, then the following ones
  /// in turn; claims[w] == step.epoch marks worker w taken in this launch (an atomic exchange: the
  /// first block to write it owns it). n blocks and n queues, so every block gets exactly one
  /// queue wherever it lands: the SM id only picks which one it tries first. The host zeroes the
  /// claims with the counters, whenever the epoch restarts. Overrides block_workers. The ranks
  /// live beside the claims rather than in the launch: 256 more parameter bytes in every
  /// launch of every build would be paid for a measuring variant.
  uint32_t* sm_claims;
};

static_assert(kMaxParamWorkers <= 256, "block_workers holds worker indices in a byte");
static_assert(sizeof(KernelArgs) <= 4096, "a kernel's parameters must fit the 4 KiB launch limit");

static_assert(instructions::kTaskBlobBytes % 16 == 0, "the kernel copies task blobs word by word");

/// Most weight-ring slots a block keeps (each has an mbarrier in static shared memory).
inline constexpr int kMaxRingSlots = 8;

/// Compiled resources of the kernel and how many blocks fit per SM with `dyn_smem` bytes.
struct KernelResources {
  int regs_per_thread = 0;
  int local_bytes_per_thread = 0;   ///< stack frame / spills
  int static_smem_bytes = 0;
  int max_dyn_smem_bytes = 0;       ///< the device's opt-in limit minus the static part
  int blocks_per_sm = 0;
  int sm_count = 0;
  bool cooperative = false;         ///< the device supports cooperative launch
  int binary_version = 0;           ///< CUDA: the kernel's SASS arch (90 = sm_90); 0 on HIP
};

/// One compiled persistent kernel. Two are built (CUDA): the default one, and one whose
/// RMSNORM_MLP_FOLD tasks ride the weight stream (vm/cuda/persistent_kernel_fold.cu, the same
/// source with AMK_FOLD_STREAM). They are separate because the fold's streamed path in the kernel
/// costs every other task 1.3-3.5% through ptxas' allocation of the whole kernel
/// (docs/PERFORMANCE.md rows 140, 160): the executor launches the fold kernel only for programs
/// that have folds, so no other program pays for them.
struct KernelEntry {
  const char* name;  ///< "default", "fold", "attention" or "rope", for reports
  /// Raise the kernel's dynamic shared-memory limit to `dyn_smem` and report its resources.
  Status (*resources)(size_t dyn_smem, KernelResources* out);
  /// Cooperative launch of `workers` blocks on `stream`.
  Status (*launch)(const KernelArgs& args, int workers, size_t dyn_smem, gpu::Stream stream);
  /// Whether its RMSNORM_MLP_FOLD tasks may ride the weight stream (else the executor leaves them
  /// off the ring and they run the plain fold, mlp_fold_run).
  bool streams_folds;
  /// Whether its FUSED ATTENTION_GEMV_ADD tasks may ride the weight stream (else they run their
  /// halves off the ring, fused_run).
  bool streams_attention;
  /// Whether it runs the step-position GEMVs (FUSED RMSNORM_GEMV_ROPE / _APPEND / _ROPE_APPEND),
  /// on the weight stream where it has one: the rope and fold kernels (and HIP's only kernel).
  bool streams_step_gemv;
};

/// The kernel every program without folds runs. It streams folds only in a build whose CUDA
/// flags define AMK_FOLD_STREAM (the A/B of docs/PERFORMANCE.md row 160).
KernelEntry default_kernel();

/// The kernel for programs with RMSNORM_MLP_FOLD tasks: streams them (sm_90 and later; elsewhere
/// the ring is off and they run the plain fold anyway). HIP builds have none: default_kernel().
KernelEntry fold_kernel();

/// The kernel for programs with FUSED ATTENTION_GEMV_ADD tasks, the only one that runs them:
/// streams them (vm/cuda/persistent_kernel_attn.cu) or runs their halves; its folds run the plain
/// path. HIP builds have none: default_kernel(), which runs their halves.
KernelEntry attention_kernel();

/// The kernel for programs with step-position GEMVs and no folds (vm/cuda/persistent_kernel_rope.cu):
/// the only kernel besides the fold kernel that runs them. HIP builds have none: default_kernel().
KernelEntry step_gemv_kernel();

/// Whether this build's kernels claim their queues by SM (-DAMK_SM_CLAIM: KernelArgs::sm_claims);
/// the same in every kernel of a build (one set of CUDA flags).
bool kernel_claims_by_sm();

/// Cooperative launch of an empty kernel with the persistent kernel's geometry (block size,
/// `workers` blocks, `dyn_smem` bytes of dynamic shared memory): the floor under every launch.
Status empty_kernel_launch(int workers, size_t dyn_smem, gpu::Stream stream);

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
