// vm/cuda/persistent_kernel.cu: the persistent megakernel. Block b is worker b: it walks
// sm_queue[sm_queue_offsets[b] .. sm_queue_offsets[b + 1]) in order.
//
// A block is a loader warp plus compute warps (instructions/block_geometry.h). The loader runs
// ahead of the compute warps by up to args.staged_tasks tasks: it copies each task's instruction
// and host-decoded operands (args.blobs, instructions/task_blob.h: the micro-kernels then skip
// their device decode) into a staging slot in shared memory, polls the task's counters until each
// reaches (epoch - 1) * producers[c] + threshold (relaxed polls, one acquire fence, periodic
// checks of the device error slot and the host-mapped abort flag), and publishes the slot
// (block-scope release). Meanwhile it keeps the weight stream (below) full. The compute warps
// take published slots in order, run the micro-kernel, meet at a barrier of their own, and their
// thread 0 releases +1 on out_counter, records progress and hands the slot back. So a task's
// operand copy and counter wait overlap the previous task's arithmetic, and the only thing
// between two tasks on the compute warps is one shared-memory flag. The loader's lane 0 also does
// the scalar work a task would otherwise start with, while it stages it: the checks of a streamed
// task's plan (check_streamed) and the step-dependent bind of an attention task (prebind_task).
// On one thread at the head of the task, the compute warps waited ~0.7-0.9 us at their next
// barrier for each (docs/PERFORMANCE.md rows 114-117).
//
// The first error wins the device error slot (atomicCAS) and the block leaves; the others see
// the slot in their waits and leave too. Never __trap: it would kill the context and the
// executor could not report or continue. On HIP (no loader warp: an AMD workgroup has a single
// barrier) the compute wavefronts stage, wait for and run each task themselves, in the same slot.
//
// The weight stream (sm_90, args.ring_slots > 0): weights never depend on activations, so an SM
// can read its queue's weights long before the tasks that use them may run. The host lists, per
// queue slot, the weight bytes that task streams (args.stream, WeightStreamEntry); the loader
// walks that list as one continuous byte stream cut into chunks of whole rows, and keeps every
// ring slot busy with one bulk copy (TMA) per chunk, each completing on that slot's mbarrier.
// Tasks consume the chunks in the same order (gemv_stream_begin / gemv_stream_chunk, from a
// GemvPlan the host decoded, in the task's blob) and report each consumed chunk (a task's last one
// only after the task's release); the loader refills the freed slot at once, with the next chunk
// of this task or of a later one. So an SM's
// HBM stream does not stop at task boundaries, counter waits or stage barriers, and a task's
// size no longer decides how many bytes are in flight. Tasks whose weights do not fit the stream
// (odd layouts, batch > 1, rows longer than a slot) load them from global memory as before, with
// an L2 prefetch (args.prefetch_depth > 0) issued by the loader when it stages them, if the ring is off.

// The step-position GEMVs (FUSED recipes 10-12, docs/ROPE_IN_GEMV.md): their rotating epilogue in
// the weight stream's chunk loop and their plain path cost every other program 1-2% through
// ptxas' allocation of the default kernel, though its spill counts did not move
// (docs/PERFORMANCE.md row 185). So they run in a kernel of their own,
// vm/cuda/persistent_kernel_rope.cu (step_gemv_kernel(): AMK_STEP_GEMV_KERNEL_TU), and in the fold
// kernel (a fold program may have them too); the default and attention kernels compile them out
// (AMK_NO_STEP_STREAM: BAD_PARAMS there, and the executor never gives them such a program).
// HIP's only kernel has their plain path. Defined before any include: instructions/fused.h and
// gemv_like.h leave the recipes' device decode out of the kernels without them.
#if !defined(AMK_STEP_GEMV_KERNEL_TU) && !defined(AMK_FOLD_KERNEL_TU) && !defined(AMK_USE_HIP) && \
    !defined(AMK_NO_STEP_STREAM)
#define AMK_NO_STEP_STREAM 1
#endif  // the default and attention kernels

#include "vm/cuda/persistent_kernel.h"

// -DAMK_FOLD_STREAM: RMSNORM_MLP_FOLD tasks ride the weight stream (mlp_fold_streamed, below).
// Defined before the micro-kernels are included: fused_run hands a streamed fold to
// mlp_fold_streamed, which finds the ring and the task's chunks from the kernel's shared state.
// vm/cuda/persistent_kernel_fold.cu defines it and AMK_FOLD_KERNEL_TU and includes this file: the
// fold kernel (fold_kernel()), whose kernel and host functions live in namespace fold_tu
// (AMK_KERNEL_TU_NS).
#if defined(AMK_FOLD_STREAM) && !defined(AMK_USE_HIP)  // host and device passes alike
#define AMK_FOLD_STREAM_LINK 1
#endif  // AMK_FOLD_STREAM
// -DAMK_ATTENTION_ROW_STREAM: FUSED ATTENTION_GEMV_ADD tasks ride the weight stream, their x the
// attention that instructions/attention_row.cuh computes in the work area. Its call at the head of
// run_streamed moves ptxas' allocation of the whole kernel (spill stores 136 -> 156 B, sm_90a;
// 448 B with its double buffer, PERFORMANCE rows 174-175), so
// it lives in a kernel of its own, vm/cuda/persistent_kernel_attn.cu (attention_kernel()), that
// the executor launches only for programs with such tasks.
#if defined(AMK_ATTENTION_ROW_STREAM) && !defined(AMK_USE_HIP)
#define AMK_ATTENTION_ROW_LINK 1
#endif  // AMK_ATTENTION_ROW_STREAM
// ATTENTION_GEMV_ADD's generic device path (instructions/fused.cuh): in the attention kernel and
// in HIP's only kernel; the executor never gives such a task to the others.
#if defined(AMK_ATTENTION_ROW_LINK) || defined(AMK_USE_HIP)
#define AMK_ATTENTION_GEMV_ON_DEVICE 1
#endif  // AMK_ATTENTION_ROW_LINK || AMK_USE_HIP


#include "instructions/device_dispatch.cuh"
#include "instructions/attention_row.cuh"
#include "instructions/gemv_stream.cuh"
#include "instructions/mlp_fold_stream.cuh"
#include "targets/cuda/bulk_copy.cuh"
#include "targets/cuda/bulk_prefetch.cuh"
#include "vm/cuda/dyn_smem_layout.h"
#include "vm/cuda/ring_index.h"
#include "vm/cuda/sm_claim.h"
#include "vm/cuda/stage_handoff.cuh"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side (targets/gpu_vendor.h)
namespace {

using instructions::DeviceCtx;
using instructions::kComputeThreads;

/// One staged task: what the compute warps need to run it, filled by the loader.
struct TaskSlot {
  amk_instruction_t inst;
  WeightStreamEntry entry;  ///< its share of the weight stream (bytes 0: none)
  int32_t stop;             ///< 0: run it; > 0: an error code for it; -1: the launch is abandoned
  /// A streamed task (entry.bytes > 0), checked by the loader when it staged it (check_streamed):
  /// 0 or the error code the compute warps report, and its rows per chunk.
  int32_t stream_rc;
  int32_t rows_per_chunk;
#ifdef AMK_FOLD_STREAM_LINK
  /// A fold on the weight stream (check_streamed): its chunks, which the compute warps count
  /// consumed before device_execute runs it; 0 for every other task.
  int32_t fold_chunks;
  int32_t first_chunk;  ///< a streamed task: the number of its first chunk on the ring (the loader's count)
#endif  // AMK_FOLD_STREAM_LINK
  /// Its host-decoded operands (instructions/task_blob.h).
  alignas(16) unsigned char blob[instructions::kTaskBlobBytes];

  /// The blob's header, and the Args behind it (the caller checked the header's tag).
  __device__ instructions::TaskBlobHeader& header() { return *reinterpret_cast<instructions::TaskBlobHeader*>(blob); }
  template <typename Args>
  __device__ Args& args() {
    return *reinterpret_cast<Args*>(blob + sizeof(instructions::TaskBlobHeader));
  }
};

#if AMK_HAVE_BULK_COPY
/// The ring in dynamic shared memory, the same in every thread. Chunks are numbered in stream
/// order; chunk n lives in slot n % slots and completes phase n / slots of that slot's mbarrier.
struct RingView {
  char* base;
  uint64_t* bars;
  int32_t slots, slot_bytes;

  __device__ uint64_t* bar(int32_t n) const { return &bars[n % slots]; }
  /// Every calling thread: wait until chunk n has landed (its bytes are then visible to it).
  __device__ void wait(int32_t n) const { gpu::mbarrier_wait_parity(bar(n), (n / slots) & 1); }

  /// The same by a stepped place (vm/cuda/ring_index.h): no division per chunk.
  __device__ char* slot(const RingIndex& at) const { return base + static_cast<int64_t>(at.slot) * slot_bytes; }
  __device__ void wait(const RingIndex& at) const { gpu::mbarrier_wait_parity(&bars[at.slot], at.lap & 1u); }
};

/// One worker's chunk records in a traced launch (vm/trace.h), indexed by chunk number.
struct ChunkTrace {
  ChunkTiming* base;  ///< nullptr: not traced
  int32_t cap;

  __device__ static ChunkTrace of(const KernelArgs& args, int worker) {
    if (args.chunk_trace == nullptr || args.chunk_trace_per_worker <= 0) return ChunkTrace{nullptr, 0};
    return ChunkTrace{args.chunk_trace + static_cast<int64_t>(worker) * args.chunk_trace_per_worker,
                      args.chunk_trace_per_worker};
  }
  __device__ ChunkTiming* at(int32_t n) const { return base != nullptr && n < cap ? &base[n] : nullptr; }
};
#endif  // AMK_HAVE_BULK_COPY

/// Shared state of one worker block.
struct SharedState {
  amk_program_t prog;
  amk_step_t step;  ///< the launch's step block (read once; prog.step points here)
  float red[2 * gpu::kMaxWarps];
  TaskSlot slot[kMaxStagedTasks];  ///< task t of this worker's queue lives in slot[t % staged_tasks]
  // Hand-offs between the loader and the compute warps (stage_handoff.cuh). Phase k of a slot's
  // hand-off is its k-th use: task t is use t / staged_tasks of slot t % staged_tasks.
  StageHandoff task_ready[kMaxStagedTasks];  ///< loader lanes -> compute: staged, counters met (or stop set)
  StageHandoff task_free[kMaxStagedTasks];   ///< compute -> loader: the slot's task finished
  StageHandoff quit;                         ///< compute -> loader: the compute warps left early
#if AMK_HAVE_BULK_COPY
  StageHandoff ring_free[kMaxRingSlots];  ///< compute -> loader: the ring slot's chunk was consumed
  uint64_t ring_bar[kMaxRingSlots];  ///< one mbarrier per slot, completed by its bulk copy
  float part[2][instructions::kStreamPartials];  ///< gemv_stream_chunk's partial sums, two buffers
#ifdef AMK_FOLD_STREAM_LINK
  RingView fold_ring;       ///< the ring and the chunk records, for mlp_fold_streamed
  ChunkTrace fold_trace;
#endif  // AMK_FOLD_STREAM_LINK
#endif  // AMK_HAVE_BULK_COPY
};

/// Threads [t, t + n) of the block copy queue slot qi's instruction, operands and stream entry
/// into `slot` (16 bytes per load; the instruction is 224 bytes, a blob kTaskBlobBytes).
__device__ void stage_task(const KernelArgs& args, int32_t qi, TaskSlot& slot, int t, int n) {
  static_assert(sizeof(amk_instruction_t) % 16 == 0 && alignof(TaskSlot) >= 16, "16-byte copies");
  // The instruction and the blob as one run of 16-byte words; each thread loads all of its words
  // before storing any (a load-store loop would pay one global round trip per word: the compiler
  // cannot tell the shared destination from the global source).
  constexpr int kInstVecs = static_cast<int>(sizeof(amk_instruction_t) / 16);
  constexpr int kVecs = kInstVecs + static_cast<int>(instructions::kTaskBlobBytes / 16);
  constexpr int kMaxPerThread = 4;  // the loader warp: 71 words over its lanes
#ifdef AMK_NO_QUEUE_INSTS  // A/B knob: the instruction through sm_queue (one more round trip)
  const auto* isrc = reinterpret_cast<const int4*>(&args.prog.instructions[args.prog.sm_queue[qi]]);
#else
  const auto* isrc = reinterpret_cast<const int4*>(args.queue_insts != nullptr ? &args.queue_insts[qi]
                                                                               : &args.prog.instructions[args.prog.sm_queue[qi]]);
#endif  // AMK_NO_QUEUE_INSTS
  const auto* bsrc = reinterpret_cast<const int4*>(args.blobs + static_cast<int64_t>(qi) * instructions::kTaskBlobBytes);
  const int words = args.blobs != nullptr ? kVecs : kInstVecs;
  for (int i0 = t; i0 < words; i0 += kMaxPerThread * n) {
    int4 v[kMaxPerThread];
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int i = i0 + j * n;
      if (i < words) v[j] = i < kInstVecs ? isrc[i] : bsrc[i - kInstVecs];
    }
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int i = i0 + j * n;
      if (i < words) {
        if (i < kInstVecs) reinterpret_cast<int4*>(&slot.inst)[i] = v[j];
        else reinterpret_cast<int4*>(slot.blob)[i - kInstVecs] = v[j];
      }
    }
  }
  if (t == 0) {
    if (args.blobs == nullptr) slot.header().tag = -1;  // decode on the device
    slot.entry = args.stream != nullptr ? args.stream[qi] : WeightStreamEntry{nullptr, 0, 0};
#ifdef AMK_FOLD_STREAM_LINK
    slot.fold_chunks = 0;
#endif  // AMK_FOLD_STREAM_LINK
  }
}

/// One look at `inst`'s counters from index *next on, advancing *next past each one met.
/// Returns 0 once all are met (after one acquire fence), 1 while one is not, or BAD_PARAMS for a
/// counter index outside the table. Polls are relaxed loads of the counter alone: an acquire load
/// per poll would invalidate this SM's L1 each time.
__device__ int32_t poll_counters(const amk_program_t& p, const amk_instruction_t& inst, uint32_t epoch, int* next) {
  if (inst.n_waits < 0 || inst.n_waits > AMK_MAX_WAITS) return AMK_DEVERR_BAD_PARAMS;
  for (; *next < inst.n_waits; ++*next) {
    const int32_t c = inst.wait_counter[*next];
    if (c < 0 || c >= p.n_counters) return AMK_DEVERR_BAD_PARAMS;
    const uint32_t target = (epoch - 1u) * p.counter_producers[c] + inst.wait_threshold[*next];
    if (gpu::load_relaxed_gpu(&p.counters[c]) < target) return 1;
  }
  if (inst.n_waits > 0) gpu::fence_acquire_gpu();  // nothing to acquire from without a wait
  return 0;
}

/// Whether the launch is being abandoned: another block failed, or the host watchdog fired.
/// Reading the error slot and the host-mapped abort flag (a PCIe round trip) costs microseconds,
/// so waits check them only every kPollCheckEvery polls.
constexpr uint32_t kPollCheckEvery = 256;
__device__ bool launch_abandoned(const amk_program_t& p) {
  return gpu::load_volatile(&p.error->code) != 0 || gpu::load_volatile(p.abort_flag) != 0;
}

/// One thread: wait for every counter of `inst` (the HIP path, without a loader warp). Returns
/// poll_counters' error, -1 when the launch is being abandoned, 0 when the task may run.
__device__ int32_t wait_counters(const amk_program_t& p, const amk_instruction_t& inst, uint32_t epoch,
                                 uint32_t poll_sleep_ns) {
  int next = 0;
  for (uint32_t polls = 1;; ++polls) {
    const int32_t r = poll_counters(p, inst, epoch, &next);
    if (r != 1) return r;
    if (polls % kPollCheckEvery == 0 && launch_abandoned(p)) return -1;
    gpu::spin_pause(poll_sleep_ns > 0 ? poll_sleep_ns : 100);
  }
}

/// Warm L2 with the weights of task `inst`, threads [t, t + n).
__device__ void prefetch_weights(const amk_program_t& p, const amk_instruction_t& inst, int t, int n) {
  const void* ptr;
  uint64_t bytes;
  instructions::device_weight_range(p, inst, &ptr, &bytes);
  if (bytes > 0) gpu::prefetch_l2(ptr, bytes, t, n);
}

#ifdef AMK_FOLD_STREAM_LINK
inline constexpr bool kFoldStream = true;
#else
inline constexpr bool kFoldStream = false;
#endif  // AMK_FOLD_STREAM_LINK
// Whether this kernel runs the step-position GEMVs (above), on the weight stream where it has one.
#ifdef AMK_NO_STEP_STREAM
inline constexpr bool kStepGemvStream = false;
#else
inline constexpr bool kStepGemvStream = true;
#endif  // AMK_NO_STEP_STREAM
#ifdef AMK_ATTENTION_ROW_LINK
inline constexpr bool kAttentionRowStream = instructions::kStreamsAttention;
#else
inline constexpr bool kAttentionRowStream = false;
#endif  // AMK_ATTENTION_ROW_LINK

#if AMK_HAVE_BULK_COPY
/// Whether this launch streams weights through the ring.
__device__ bool streams(const KernelArgs& args) {
  return args.ring_slots > 0 && args.stream != nullptr && args.blobs != nullptr;
}

/// The ring of this launch: dynamic shared memory after the micro-kernels' work area, at the
/// host's offset from the aligned base (dyn_smem_layout.h).
__device__ RingView ring_view(const KernelArgs& args, void* s_dyn, uint64_t* bars) {
  return RingView{static_cast<char*>(s_dyn) + args.ring_offset, bars,
                  args.ring_slots < kMaxRingSlots ? args.ring_slots : kMaxRingSlots, args.ring_slot_bytes};
}

/// A cursor over this worker's stream table: which bytes of which queue slot come next.
struct StreamCursor {
  const WeightStreamEntry* table;
  int32_t end;             ///< one past this worker's last queue slot
  int32_t q;               ///< queue slot whose bytes are next
  WeightStreamEntry cur;   ///< table[q]
  WeightStreamEntry next;  ///< table[q + 1], loaded one entry early (its latency hides behind q's bytes)
  uint32_t offset;         ///< bytes of cur already taken

  __device__ void start(const WeightStreamEntry* t, int32_t begin, int32_t e) {
    table = t;
    end = e;
    q = begin;
    offset = 0;
    cur = q < end ? table[q] : WeightStreamEntry{nullptr, 0, 0};
    next = q + 1 < end ? table[q + 1] : WeightStreamEntry{nullptr, 0, 0};
  }
  /// Skip to the next bytes (entries with chunk_bytes 0 are skipped: their tasks refuse them, no
  /// hang); false when the table is exhausted.
  __device__ bool more() {
    while (q < end && (offset >= cur.bytes || cur.chunk_bytes == 0)) {
      ++q;
      offset = 0;
      cur = next;
      next = q + 1 < end ? table[q + 1] : WeightStreamEntry{nullptr, 0, 0};
    }
    return q < end;
  }
  /// The next chunk (more() was true): its address and size, then past it.
  __device__ const char* take(uint32_t* n) {
    const uint32_t left = cur.bytes - offset;
    *n = left < cur.chunk_bytes ? left : cur.chunk_bytes;
    const char* p = static_cast<const char*>(cur.src) + offset;
    offset += *n;
    return p;
  }
};

/// The weight stream's producer, one loader thread: walks the table of this worker's queue slots
/// and issues their chunks in order into the ring.
struct StreamProducer {
  RingView ring;
  StageHandoff* ring_free;  ///< [slots]: phase k of slot s = chunk s + k * slots consumed
  StreamCursor copy;        ///< what the ring gets next
  int32_t issued;           ///< chunks issued so far
  RingIndex at;             ///< chunk `issued`'s place in the ring
  ChunkTrace trace;         ///< this worker's chunk records (traced launches)

  __device__ void start(const WeightStreamEntry* t, const RingView& r, StageHandoff* free, int32_t begin, int32_t e,
                        const ChunkTrace& tr) {
    ring = r;
    ring_free = free;
    copy.start(t, begin, e);
    issued = 0;
    at = RingIndex{};
    trace = tr;
  }

  /// Issue chunks into every free ring slot while the queue's weights last, at most `limit`
  /// (<= slots) of them not yet consumed; returns whether it issued any. Chunk n may go once chunk
  /// n - slots, the slot's previous one, was consumed, and with a lower limit once chunk
  /// n - limit was (chunks are consumed in order).
  __device__ bool top_up(int32_t limit) {
    const int32_t before = issued;
    while ((issued < ring.slots || ring_free[at.slot].test(at.lap - 1u)) && copy.more()) {
      if (limit < ring.slots && issued >= limit) {
        const RingIndex m = RingIndex::of(issued - limit, ring.slots);
        if (!ring_free[m.slot].test(m.lap)) break;
      }
      uint32_t n;
      const int32_t q = copy.q;
      const char* src = copy.take(&n);
      if (ChunkTiming* rec = trace.at(issued); rec != nullptr) {
        rec->queue_slot = q;
        rec->bytes = n;
        rec->t_issue = gpu::global_timer_ns();
      }
      gpu::bulk_copy_once_to_shared(ring.slot(at), src, n, &ring.bars[at.slot]);
      ++issued;
      at.step(ring.slots);
    }
    return issued != before;
  }

  /// Nothing left to copy into the ring.
  __device__ bool finished() { return !copy.more(); }

  /// Wait until every chunk issued has landed: no bulk copy may still be writing into this
  /// block's shared memory when the block leaves. The last `slots` chunks are each the latest of
  /// their slot, so their phases are the ones to wait for (earlier ones completed before them).
  __device__ void drain() const {
    for (int32_t n = issued > ring.slots ? issued - ring.slots : 0; n < issued; ++n) ring.wait(n);
  }
};


#ifdef AMK_EAGER_RING_FREE
inline constexpr bool kDeferLastRingFree = false;
#else
inline constexpr bool kDeferLastRingFree = true;
#endif  // AMK_EAGER_RING_FREE

static_assert(instructions::kLoaderWarps > 0, "sm_90's weight stream relies on the loader for check_streamed");

/// Whether the streamed task staged in `slot` may run: its blob is a GemvPlan the host decoded
/// (upload_task_blobs) and its chunks fit this code's own limits (the host admitted the task with
/// gemv_stream_chunk_bytes; these checks do not trust it). Sets slot.stream_rc (0 or
/// AMK_DEVERR_BAD_PARAMS) and slot.rows_per_chunk. The loader runs it when it stages the task,
/// ahead of the compute warps: at the head of the task it was a chain of ~150 dependent scalar
/// instructions and shared loads, 0.74 us of a gate / up task's 2.3 us head on the H200
/// (docs/PERFORMANCE.md row 114), on the critical path of every GEMV stage. One thread.
__device__ void check_streamed(const KernelArgs& args, TaskSlot& slot) {
  slot.stream_rc = AMK_DEVERR_BAD_PARAMS;
  slot.rows_per_chunk = 0;
  if (args.blobs == nullptr || slot.header().tag != instructions::TaskBlobTag<instructions::GemvPlan>::value ||
      slot.header().op != slot.inst.op)
    return;
  const auto& plan = slot.args<instructions::GemvPlan>();
  const WeightStreamEntry& e = slot.entry;
  const int64_t row_bytes = plan.mm.K * (instructions::dtype_bits(plan.mm.w.dtype) / 8);
  const int64_t cap = static_cast<int64_t>(args.work_floats) & ~int64_t{7};
  if (row_bytes <= 0 || e.chunk_bytes == 0 || row_bytes > e.chunk_bytes ||
      e.chunk_bytes % static_cast<uint32_t>(row_bytes) != 0 || e.chunk_bytes > static_cast<uint32_t>(args.ring_slot_bytes) ||
      plan.mm.m_end - plan.mm.m_begin != 1 || plan.mm.K > cap)
    return;
  const instructions::StreamChunking ch =
      instructions::gemv_stream_chunking(row_bytes, plan.mm.n_end - plan.mm.n_begin, e.chunk_bytes);
  const int64_t rows_per_chunk = ch.rows_per_chunk;
  // A fold (streamed only where kFoldStream): rows of whole columns per task, x and the task's
  // activations in the work area, every output vector in registers.
#ifndef AMK_FOLD_STREAM_LINK
  if (plan.fold) return;
#else
  if (plan.fold) {
    const int64_t task_rows = plan.mm.n_end - plan.mm.n_begin;
    if (rows_per_chunk <= 0 || rows_per_chunk > 3 * (instructions::kFoldMaxPieces - 1) || task_rows % 3 != 0 ||
        plan.mm.n_begin % 3 != 0 || task_rows > INT32_MAX || plan.mm.K + task_rows / 3 > cap ||
        ch.row_vecs > instructions::kFoldVecsPerThread * instructions::kComputeThreads ||
        plan.mm.y.dtype != AMK_DTYPE_F32 || (reinterpret_cast<uintptr_t>(plan.mm.y.ptr) & 15u) != 0 ||
        !instructions::fold_stream_split_ok(plan.split_full, instructions::fold_chunk_pieces_max(static_cast<int32_t>(rows_per_chunk)),
                                            ch.row_vecs, instructions::kStreamPartials))
      return;
    // The compute warps run it through device_execute (mlp_fold_streamed), as a task that does
    // not stream, and count its chunks consumed before they run it.
    slot.rows_per_chunk = static_cast<int32_t>(rows_per_chunk);
    slot.fold_chunks = static_cast<int32_t>((plan.mm.n_end - plan.mm.n_begin + rows_per_chunk - 1) / rows_per_chunk);
    slot.entry.bytes = 0;
    slot.stream_rc = AMK_DEVERR_NONE;
    return;
  }
#endif  // AMK_FOLD_STREAM_LINK
  // ATTENTION_GEMV_ADD: its attention is made in the work area beside x (attention_row_stage
  // checks the rest of its plan, per step).
#ifdef AMK_ATTENTION_ROW_LINK
  if (plan.prologue == instructions::kGemvAttention && instructions::attention_row_floats(plan.attn) > cap) return;
#else
  if (plan.prologue == instructions::kGemvAttention) return;  // only attention_kernel() stages it
#endif  // AMK_ATTENTION_ROW_LINK
  // A rotating plan's chunks hold whole rope pairs (gemv_stream_store_rotated).
#ifdef AMK_NO_STEP_STREAM
  if (plan.step.inv_freq != nullptr || plan.step.cache != nullptr) return;  // the host keeps them off this kernel's ring
#else
  // Its y is the fp32 scratch beside x that gemv_stream_rotate_after reads, bound by the loader
  // (bind_streamed_step); the real output is its copy.
  if (plan.step.inv_freq != nullptr &&
      (rows_per_chunk % 2 != 0 || plan.mm.n_begin % 2 != 0 || (plan.mm.n_end - plan.mm.n_begin) % 2 != 0 ||
       plan.mm.K + (plan.mm.n_end - plan.mm.n_begin) > cap || plan.mm.y.dtype != AMK_DTYPE_F32 || !plan.mm.y.contiguous ||
       plan.mm.y.ptr != nullptr || plan.has_copy || plan.has_bias || plan.has_residual))
    return;
#endif  // AMK_NO_STEP_STREAM
  if (rows_per_chunk <= 0 || rows_per_chunk > instructions::kStreamChunkMaxRows ||
      !instructions::gemv_stream_split_ok(plan.split_full, rows_per_chunk, ch.row_vecs, instructions::kStreamPartials) ||
      !instructions::gemv_stream_split_ok(plan.split_last, ch.last_rows, ch.row_vecs, instructions::kStreamPartials))
    return;
  slot.rows_per_chunk = static_cast<int32_t>(rows_per_chunk);
  slot.stream_rc = AMK_DEVERR_NONE;
}

/// The step's position bound into the staged plan of a streamed FUSED recipe 10-12 (its rotation
/// angle, and the cache row an append writes): a bind error becomes the task's stream_rc. A
/// rotating plan's output is its copy (the cache row moves there), and its y the fp32 scratch at
/// s_work + K, addressed as y is (gemv_stream_rotate_after). After check_streamed, on the same
/// thread. Nothing for any other plan.
__device__ void bind_streamed_step(const amk_program_t& p, TaskSlot& slot, float* s_work) {
  if constexpr (!kStepGemvStream) return;  // check_streamed refused them
  auto& plan = slot.args<instructions::GemvPlan>();
  if (slot.stream_rc != AMK_DEVERR_NONE || (plan.step.inv_freq == nullptr && plan.step.cache == nullptr)) return;
  if (plan.step.inv_freq == nullptr) {  // RMSNORM_GEMV_APPEND: y is the cache row itself
    slot.stream_rc = instructions::bind_step_gemv(p, slot.inst, &plan.step, &plan.mm.y);
    return;
  }
  slot.stream_rc = instructions::bind_step_gemv(p, slot.inst, &plan.step, &plan.copy);
  // Element m_begin * n_out + n_begin (the tile's first) at s_work[K]: the chunk loop's indices.
  plan.mm.y.ptr = s_work + (plan.mm.K - (plan.mm.m_begin * plan.mm.n_out + plan.mm.n_begin));
}

#ifdef AMK_FOLD_STREAM_LINK
// Only where folds stream: an unused constant is a warning, and the device builds use -Werror.
#ifdef AMK_FOLD_EAGER_FREE  // A/B: a fold frees its last chunk before its sums and release
inline constexpr bool kFoldEagerFree = true;
#else
inline constexpr bool kFoldEagerFree = false;
#endif  // AMK_FOLD_EAGER_FREE

/// The chunk loop of a streamed fold from chunk `first` on, for weights of dtype DT
/// (mlp_fold_streamed).
template <int DT>
__device__ __forceinline__ void fold_chunks(const instructions::GemvPlan& plan, const int64_t rows_per_chunk, float scale,
                                            const DeviceCtx& ctx, const RingView& ring,
                                            float (*part)[instructions::kStreamPartials], int32_t first,
                                            StageHandoff* ring_free, const ChunkTrace& trace) {
  const int32_t row_vecs = static_cast<int32_t>(plan.mm.K / instructions::kFoldEpv<DT>);
  // This runs inside mlp_fold_streamed, a __noinline__ function, where the pointers into shared
  // memory come from the DeviceCtx and the SharedState: tell the compiler, once per base (never
  // twice on one base: gpu::assume_shared), so that the chunk's accesses are ld.shared /
  // st.shared (docs/PERFORMANCE.md row 163).
  float* const s_x = ctx.s_work;
  gpu::assume_shared(s_x);
  const RingView rv = ring;  // a copy: a barrier's memory clobber would reload ring.base, unassumed
  gpu::assume_shared(rv.base);
  gpu::assume_shared(part);
  float* const s_act = s_x + plan.mm.K;  // one per column, beside x (check_streamed checked the room)
  instructions::FoldSums sums;
#pragma unroll
  for (int q = 0; q < static_cast<int>(instructions::kFoldVecsPerThread); ++q)
#pragma unroll
    for (int e = 0; e < 8; ++e) sums.v[q][e] = 0.0f;
  const auto task_rows = static_cast<int32_t>(plan.mm.n_end - plan.mm.n_begin);
  const auto rpc = static_cast<int32_t>(rows_per_chunk);
  RingIndex at = RingIndex::of(first, ring.slots);  // one division per task, none per chunk (row 143)
  for (int32_t r0 = 0; r0 < task_rows; r0 += rpc, at.step(ring.slots)) {
    const bool last = task_rows - r0 <= rpc;
    const int32_t c = first++;
    ChunkTiming* rec = threadIdx.x == 0 ? trace.at(c) : nullptr;
    if (rec != nullptr) rec->t_wait = gpu::global_timer_ns();
    ring.wait(at);
    if (rec != nullptr) rec->t_ready = gpu::global_timer_ns();
    instructions::fold_stream_chunk<DT>(rv.slot(at), row_vecs, r0, last ? task_rows : r0 + rpc, plan.split_full,
                                        scale, s_x, s_act, part[c & 1], sums,
                                        rec != nullptr ? &rec->t_ready : nullptr);
    if (rec != nullptr) rec->t_done = gpu::global_timer_ns();
    // Each thread's own reads of the slot are done (its down^T loads were its last): release them,
    // except thread 0 on the task's last chunk (the kernel loop's free_after_release, as for
    // run_streamed: eagerly, a refill's bulk copy in flight held up the release).
    if (!(kDeferLastRingFree && !kFoldEagerFree && last && threadIdx.x == 0)) ring_free[at.slot].arrive();
  }
  instructions::fold_add_sums<DT>(static_cast<float*>(plan.mm.y.ptr), row_vecs, sums);
}

#endif  // AMK_FOLD_STREAM_LINK

/// Run a streamed GEMV-like task from its host-decoded `plan`, which check_streamed admitted with
/// `rows_per_chunk`: stage x, then consume its chunks in order, telling the loader of each freed
/// slot. `consumed` is the compute warps' count of consumed chunks (every compute thread keeps the
/// same value); `last_slot` gets the ring slot of the task's last chunk.
__device__ int32_t run_streamed(const instructions::GemvPlan& plan, const int64_t rows_per_chunk, const DeviceCtx& ctx,
                                const RingView& ring, float (*part)[instructions::kStreamPartials],
                                int32_t* consumed, int32_t* last_slot, StageHandoff* ring_free, const ChunkTrace& trace) {
#ifdef AMK_TRACE_HEAD  // measurement only (row 114): the first chunk's t_wait stamped at entry (1) or after x staging (3)
  ChunkTiming* const head_rec = threadIdx.x == 0 ? trace.at(*consumed) : nullptr;
  if (AMK_TRACE_HEAD == 1 && head_rec != nullptr) head_rec->t_wait = gpu::global_timer_ns();
#endif  // AMK_TRACE_HEAD
#ifdef AMK_ATTENTION_ROW_LINK
  // ATTENTION_GEMV_ADD: the layer's attention is the staged x (docs/ATTENTION_IN_O.md).
  float scale = 1.0f;
  if (plan.prologue == instructions::kGemvAttention) {
    const int32_t rc = instructions::attention_row_stage(plan.attn, plan.mm.w.dtype, ctx);
    if (rc != AMK_DEVERR_NONE) return rc;  // uniform
  } else {
    scale = instructions::gemv_stream_begin(plan, ctx);
  }
#else
  const float scale = instructions::gemv_stream_begin(plan, ctx);
#endif  // AMK_ATTENTION_ROW_LINK
#ifdef AMK_TRACE_HEAD
  if (AMK_TRACE_HEAD == 3 && head_rec != nullptr) head_rec->t_wait = gpu::global_timer_ns();
#endif  // AMK_TRACE_HEAD
  RingIndex at = RingIndex::of(*consumed, ring.slots);  // one division per task, none per chunk
  for (int64_t n0 = plan.mm.n_begin; n0 < plan.mm.n_end; n0 += rows_per_chunk, at.step(ring.slots)) {
    const bool last = plan.mm.n_end - n0 <= rows_per_chunk;
    const int32_t c = *consumed;
    ChunkTiming* rec = threadIdx.x == 0 ? trace.at(c) : nullptr;
#ifdef AMK_TRACE_HEAD
    if (rec != nullptr && rec != head_rec) rec->t_wait = gpu::global_timer_ns();
#else
    if (rec != nullptr) rec->t_wait = gpu::global_timer_ns();
#endif  // AMK_TRACE_HEAD
    ring.wait(at);  // every thread sees the bytes land
    if (rec != nullptr) rec->t_ready = gpu::global_timer_ns();
    instructions::gemv_stream_chunk(plan, last ? plan.split_last : plan.split_full, ring.slot(at), n0, scale,
                                    part[c & 1], ctx);
    // Past gemv_stream_chunk's barrier: every compute thread has read the slot.
    if (rec != nullptr) rec->t_done = gpu::global_timer_ns();
    *consumed = c + 1;
    // Every compute thread releases its own reads of the slot (the phase completes with the last
    // of them). Thread 0 alone after gemv_stream_chunk's barrier orders them as well by the PTX
    // memory model, but racecheck then reports the next bulk copy into the slot as racing the
    // reads; per-thread arrivals cost nothing measurable (docs/PERFORMANCE.md, row 25).
    // The task's last chunk: thread 0 arrives only after the task's release (the kernel loop's
    // free_after_release), so the loader cannot refill this slot, and put a bulk copy in
    // flight, while thread 0's red.release drains its memory operations (docs/PERFORMANCE.md,
    // row 72). -DAMK_EAGER_RING_FREE frees it at once for the A/B.
    if (!(kDeferLastRingFree && last && threadIdx.x == 0)) ring_free[at.slot].arrive();
    *last_slot = at.slot;
  }
#ifndef AMK_NO_STEP_STREAM  // kStepGemvStream
  if (plan.step.inv_freq != nullptr) instructions::gemv_stream_rotate_after(plan, ctx);  // its y was the scratch
#endif  // AMK_NO_STEP_STREAM
  return AMK_DEVERR_NONE;
}
#endif  // AMK_HAVE_BULK_COPY

#ifdef AMK_NO_PREBIND  // A/B: every micro-kernel decodes and binds its own blob
inline constexpr bool kPrebind = false;
#else
inline constexpr bool kPrebind = true;
#endif  // AMK_NO_PREBIND

/// Bind the step-dependent operands of the task staged in `slot` into its blob copy ahead of the
/// compute warps, where its micro-kernel allows it (ATTENTION_TILE and FUSED ROPE_ATTENTION:
/// AttentionTileArgs, header.bound = 1 + the bind's return code). Otherwise the micro-kernel's
/// decode_once copies the blob into its shared Args and binds them on thread 0 between three
/// barriers: 0.9 us at the head of every attention task on the H200 (docs/PERFORMANCE.md row
/// 116). One thread (the loader's lane 0), after the warp staged the slot.
__device__ void prebind_task(const amk_program_t& p, TaskSlot& slot) {
  instructions::TaskBlobHeader* h = &slot.header();
  if (h->tag != instructions::TaskBlobTag<instructions::AttentionTileArgs>::value ||
      h->bytes != static_cast<int32_t>(sizeof(instructions::AttentionTileArgs)) || h->op != slot.inst.op)
    return;
  auto* a = &slot.args<instructions::AttentionTileArgs>();
  h->bound = 1 + instructions::bind_attention_tile_step(p, slot.inst, a);
}

/// The loader warp's view of one launch. Lane 0 decides (stream refills, counter polls, hand-offs);
/// the whole warp copies a task's instruction and operands when lane 0 says which.
struct Loader {
  const KernelArgs& args;
  SharedState& s;
  int32_t begin, n_tasks;
  uint32_t epoch;
  int32_t staged = 0;      ///< tasks copied into their slots
  int32_t ready = 0;       ///< tasks published to the compute warps
  RingIndex staged_at{};   ///< task `staged`'s place among the task slots (lane 0)
  RingIndex ready_at{};    ///< task `ready`'s
  int next_wait = 0;       ///< the next counter of task `ready` to look at
  uint32_t polls = 0;      ///< polls of task `ready`'s counters so far
  long long next_poll = 0; ///< clock64() before which the counters are not polled again
  bool stopping = false;   ///< a nonzero stop was published: stage and poll nothing more
  uint32_t chunks_staged = 0;  ///< chunks of the stream table's entries staged so far (AMK_FOLD_STREAM_LINK)
#if AMK_HAVE_BULK_COPY
  int32_t finished = 0;        ///< tasks the compute warps have finished (released), in order (ring_limit)
  RingIndex finished_at{};     ///< task `finished`'s place among the task slots
  bool streaming = false;
  StreamProducer producer;
#endif  // AMK_HAVE_BULK_COPY

  /// Lane 0, one round: refill freed ring slots, poll the oldest staged task's counters
  /// (publishing it once they are met), and pick the next task to stage. Returns that task's
  /// index, -1 when there is none to stage now, or -2 when the loader is finished: every task
  /// published and every chunk issued, or the compute warps quit.
  __device__ int32_t round() {
    const int32_t S = args.staged_tasks;
    if (s.quit.test(0)) return -2;
    bool busy = false, stream_done = true;
#if AMK_HAVE_BULK_COPY
    if (streaming) {
      busy = producer.top_up(ring_limit());
      stream_done = producer.finished();
    }
#endif  // AMK_HAVE_BULK_COPY
    if (!stopping && ready < staged && clock64() >= next_poll && poll_gate_open()) busy |= poll_ready();
    if (ready == n_tasks && stream_done) return -2;
    // Task `staged` goes into slot staged % S once that slot's previous task has finished, and,
    // while a staged task still waits for its counters, only after it is published: staging is a
    // global round trip of the whole warp, issued behind the ring's refills, and a slot frees
    // when a task ends, which at a stage's end is when the next task's counters are about to be
    // met; the poll that would see them waited for it (-1.5% per token on the 1B shape,
    // docs/PERFORMANCE.md row 89). The next task cannot depend on the unstaged one (queue order).
    if (!stopping && staged < n_tasks && (ready == staged || args.stage_while_polling != 0) &&
        (staged < S || s.task_free[staged_at.slot].test(staged_at.lap - 1u)))
      return staged;
    // No pause while there is anything left to stream or poll: a freed ring slot must be
    // refilled at once (two slots in flight are all an SM's share of HBM bandwidth has), and
    // __nanosleep may sleep far longer than asked. Spinning costs one warp's issue slots.
    if (!busy && (stopping || ready == n_tasks)) gpu::spin_pause(64);
    return -1;
  }

#if AMK_HAVE_BULK_COPY
  /// How many chunks the ring may hold that are not yet consumed: KernelArgs::ring_streaming_cap
  /// while a published streamed task (a fold included) runs, ring_idle_cap while the SM waits or
  /// runs a task without weights (the attention); each 0 (the default) or at least the slots for
  /// every slot. Measuring knobs: a third slot filled only outside streamed tasks (fewer copies in
  /// flight at a release, which waits for them: rows 121, 205-207) and one chunk ahead during
  /// hops and the attention (less HBM load under their round trips) both lost against the plain
  /// ring (docs/PERFORMANCE.md rows 208-209). With both off this is one compare a round.
  __device__ int32_t ring_limit() {
    const int32_t slots = producer.ring.slots;
    const int32_t streaming = args.ring_streaming_cap > 0 && args.ring_streaming_cap < slots ? args.ring_streaming_cap : slots;
    const int32_t idle = args.ring_idle_cap > 0 && args.ring_idle_cap < slots ? args.ring_idle_cap : slots;
    if (streaming == slots && idle == slots) return slots;
    while (finished < ready && s.task_free[finished_at.slot].test(finished_at.lap)) {
      ++finished;
      finished_at.step(args.staged_tasks);
    }
    if (finished == ready) return idle;  // nothing published runs
    const TaskSlot& running = s.slot[finished_at.slot];
#ifdef AMK_FOLD_STREAM_LINK
    const bool streamed = running.entry.bytes > 0 || running.fold_chunks > 0;  // a fold's entry reads 0 (check_streamed)
#else
    const bool streamed = running.entry.bytes > 0;
#endif  // AMK_FOLD_STREAM_LINK
    return streamed ? streaming : idle;
  }
#endif  // AMK_HAVE_BULK_COPY

  /// Whether task `ready`'s counters may be polled now (KernelArgs::poll_gate): always without
  /// the gate; with it, once (gate 1: a task that does not depend on the one before is
  /// published as early as before), then only after the task before it has finished. That
  /// task's slot was restaged only after it finished; otherwise its task_free phase says (the
  /// compute warps are at most one phase ahead of it: the slot's next task cannot run before
  /// task `ready` is published).
  __device__ bool poll_gate_open() {
    if (args.poll_gate == 0 || ready == 0 || (args.poll_gate == 1 && polls == 0)) return true;
    const int32_t S = args.staged_tasks, prev = ready - 1;
    if (staged > prev + S) return true;
    const RingIndex at = ready_at.before(S);  // task prev's
    return s.task_free[at.slot].test(at.lap);
  }

  /// Poll task `ready`'s counters; publish it when they are met, on an error, or when the launch
  /// is being abandoned. Returns whether it published.
  __device__ bool poll_ready() {
    const amk_program_t& p = s.prog;
    TaskSlot& slot = s.slot[ready_at.slot];
    TaskTiming* rec = args.trace != nullptr ? &args.trace[begin + ready] : nullptr;
    if (rec != nullptr && polls == 0) rec->t_wait_begin = gpu::global_timer_ns();
#ifdef AMK_TRACE_POLL_ISSUE  // measurement only (row 153): t_wait_begin = when the poll that saw the counters met went out
    const uint64_t t_issue = rec != nullptr ? gpu::global_timer_ns() : 0;
#endif  // AMK_TRACE_POLL_ISSUE
    int32_t r = poll_counters(p, slot.inst, epoch, &next_wait);
#ifdef AMK_TRACE_POLL_ISSUE
    if (rec != nullptr && r == 0) rec->t_wait_begin = t_issue;
#endif  // AMK_TRACE_POLL_ISSUE
    ++polls;
    if (r == 1) {
      if (polls % kPollCheckEvery == 0 && launch_abandoned(p)) r = -1;
      // A pause between polls: 131 SMs polling back to back keep a hot counter's L2 slice busy
      // and slow down the producers on the critical path (docs/PERFORMANCE.md, row 12). About
      // 2 cycles per ns at the H100 / H200 SM clock; the ring is still serviced meanwhile.
      next_poll = clock64() + 2ll * args.poll_sleep_ns;
      if (r == 1) return false;
    }
    slot.stop = r;
    if (r != 0) {  // the compute warps leave at this task: stream only what the tasks before it take
      stopping = true;
#if AMK_HAVE_BULK_COPY
      if (producer.copy.end > begin + ready) producer.copy.end = begin + ready;
#endif  // AMK_HAVE_BULK_COPY
    }
#ifdef AMK_TRACE_PUBLISH  // measurement only (row 89): t_wait_begin = when the loader published
    if (rec != nullptr) rec->t_wait_begin = gpu::global_timer_ns();
#endif  // AMK_TRACE_PUBLISH
    s.task_ready[ready_at.slot].arrive();
    ++ready;
    ready_at.step(args.staged_tasks);
    next_wait = 0;
    polls = 0;
    next_poll = 0;
    return true;
  }
};

/// The loader warp: stage, watch and publish tasks ahead of the compute warps and keep the weight
/// stream full, until every task is published and every chunk issued, or the compute warps quit;
/// then wait for the chunks in flight and leave (the compute warps may still be running).
__device__ void loader_main(const KernelArgs& args, SharedState& s, void* s_dyn, int worker, int32_t begin,
                            int32_t end) {
  const int lane = gpu::lane_id();
  Loader ld{args, s, begin, end - begin, s.prog.step->epoch};
#if AMK_HAVE_BULK_COPY
  ld.streaming = streams(args);
  if (lane == 0 && ld.streaming) ld.producer.start(args.stream, ring_view(args, s_dyn, s.ring_bar), s.ring_free, begin, end,
                                                     ChunkTrace::of(args, worker));
#else
  (void)s_dyn;
  (void)worker;
#endif  // AMK_HAVE_BULK_COPY
  for (;;) {
    int32_t t = lane == 0 ? ld.round() : 0;
    t = gpu::shfl(t, 0);
    if (t == -2) break;
    if (t < 0) continue;
    // Lane 0 saw the slot freed; every lane that rewrites it acquires the compute threads'
    // releases itself (the phase is complete, so this returns at once). A shuffle orders no
    // memory, and compute-sanitizer racecheck does not carry lane 0's acquire to the other lanes
    // through a warp barrier: it reported every staged word as racing the previous task's reads.
    if (t >= args.staged_tasks) s.task_free[t % args.staged_tasks].wait(static_cast<uint32_t>(t / args.staged_tasks - 1));
    TaskSlot& slot = s.slot[t % args.staged_tasks];
    stage_task(args, begin + t, slot, lane, gpu::kWarpSize);
    gpu::warp_sync();  // the slot's words, written by every lane, before any lane reads them
    if (lane == 0) {  // published with the task
#if AMK_HAVE_BULK_COPY && !defined(AMK_CHECK_STREAM_AT_RUN)
      if (slot.entry.bytes > 0) {
#ifdef AMK_FOLD_STREAM_LINK
        // The producer's numbering of the chunks (StreamCursor): a fold finds its own from this.
        slot.first_chunk = static_cast<int32_t>(ld.chunks_staged);
        if (slot.entry.chunk_bytes > 0) ld.chunks_staged += (slot.entry.bytes + slot.entry.chunk_bytes - 1) / slot.entry.chunk_bytes;
#endif  // AMK_FOLD_STREAM_LINK
        check_streamed(args, slot);
        bind_streamed_step(s.prog, slot, reinterpret_cast<float*>(s_dyn));
      }
#endif  // AMK_HAVE_BULK_COPY
      if constexpr (kPrebind) prebind_task(s.prog, slot);  // returns at once for a blob of another Args
    }
    if (args.prefetch_depth > 0 && args.ring_slots == 0) prefetch_weights(s.prog, slot.inst, lane, gpu::kWarpSize);
    if (lane == 0) {
      ++ld.staged;
      ld.staged_at.step(args.staged_tasks);
    } else s.task_ready[t % args.staged_tasks].arrive();  // lane 0 arrives last, when it publishes
  }
#if AMK_HAVE_BULK_COPY
  if (lane == 0 && ld.streaming) ld.producer.drain();
#endif  // AMK_HAVE_BULK_COPY
}

}  // namespace
}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm

#ifdef AMK_FOLD_STREAM_LINK
namespace amk::instructions {

/// A RMSNORM_MLP_FOLD task on the weight stream (instructions/mlp_fold_stream.cuh): stage
/// rmsnorm(x) * norm_w, consume the chunks of triples from slot.first_chunk on, then add the
/// task's sums into the output. The kernel loop counted them consumed already
/// (TaskSlot::fold_chunks) and frees the last one after the task's release.
static __device__ __noinline__ int32_t mlp_fold_streamed(const DeviceCtx& ctx) {
#if AMK_HAVE_BULK_COPY
  using vm::gpuvm::SharedState;
  using vm::gpuvm::TaskSlot;
  // The kernel's DeviceCtx points into its SharedState (s_red) and at the running task's slot's
  // blob, so both are found around those pointers.
  const auto& s = *reinterpret_cast<const SharedState*>(reinterpret_cast<const unsigned char*>(ctx.s_red) -
                                                        offsetof(SharedState, red));
  const auto& slot = *reinterpret_cast<const TaskSlot*>(reinterpret_cast<const unsigned char*>(ctx.blob) -
                                                        offsetof(TaskSlot, blob));
  const auto& plan = *reinterpret_cast<const GemvPlan*>(reinterpret_cast<const unsigned char*>(ctx.blob) +
                                                        sizeof(TaskBlobHeader));
  auto* const ring_free = const_cast<vm::gpuvm::StageHandoff*>(s.ring_free);
  auto* const part = const_cast<float(*)[kStreamPartials]>(s.part);
  const float scale = gemv_stream_begin(plan, ctx);
  const int64_t rows = slot.rows_per_chunk;
  const int32_t wdt = plan.mm.w.dtype;
  if (wdt == AMK_DTYPE_BF16)
    vm::gpuvm::fold_chunks<AMK_DTYPE_BF16>(plan, rows, scale, ctx, s.fold_ring, part, slot.first_chunk, ring_free, s.fold_trace);
  else if (wdt == AMK_DTYPE_F16)
    vm::gpuvm::fold_chunks<AMK_DTYPE_F16>(plan, rows, scale, ctx, s.fold_ring, part, slot.first_chunk, ring_free, s.fold_trace);
  else
    vm::gpuvm::fold_chunks<AMK_DTYPE_F32>(plan, rows, scale, ctx, s.fold_ring, part, slot.first_chunk, ring_free, s.fold_trace);
  return AMK_DEVERR_NONE;
#else
  (void)ctx;
  return AMK_DEVERR_BAD_PARAMS;  // no ring on this architecture: the loader never admits a fold to it
#endif  // AMK_HAVE_BULK_COPY
}

}  // namespace amk::instructions
#endif  // AMK_FOLD_STREAM_LINK

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {
#ifdef AMK_KERNEL_TU_NS
namespace AMK_KERNEL_TU_NS {  // apart from the default kernel's names (persistent_kernel.cu's own TU)
#endif  // AMK_KERNEL_TU_NS

/// The dynamic shared memory base rounded up to kDynSmemAlign (the host asked for the slack), so
/// the work area and the ring sit where dyn_smem_layout says whatever the static part's size.
__device__ float4* aligned_dyn_base(float4* raw) {
#if defined(__CUDA_ARCH__)
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(raw));  // the shared window's offset
#else  // HIP: the LDS aperture is aligned far beyond 1024 bytes, so the generic address will do
  const auto at = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(raw));
#endif
  // dyn_smem_align_skip(at) written out: calling the helper here moved ptxas's allocation of the
  // whole kernel (60 -> 144 B of spill stores, locally with CUDA 13.0), and that alone can cost
  // ~2% (docs/PERFORMANCE.md row 77); tests/vm/dyn_smem_layout_test.cpp checks the helper.
  constexpr uint32_t kMask = static_cast<uint32_t>(kDynSmemAlign) - 1u;
  return reinterpret_cast<float4*>(reinterpret_cast<char*>(raw) + ((kMask + 1u - (at & kMask)) & kMask));
}

#ifdef AMK_SM_CLAIM
/// Thread 0: claim_first_free (sm_claim.h) over KernelArgs::sm_claims. Scalars only: a function
/// taking the KernelArgs by reference made ptxas copy all of them to the stack (1.9 KiB frames,
/// spills in every kernel).
struct ClaimExchange {
  uint32_t* claims;
  AMK_DEVICE uint32_t operator()(int w, uint32_t epoch) const { return atomicExch(&claims[w], epoch); }
};
AMK_DEVICE_NOINLINE int claim_worker(uint32_t* claims, uint32_t epoch, int first, int n) {
  return claim_first_free(ClaimExchange{claims}, epoch, first, n);
}
#endif  // AMK_SM_CLAIM

__global__ void __launch_bounds__(kBlockThreads, 1) amk_persistent_kernel(KernelArgs args) {
  extern __shared__ float4 s_dyn_raw[];
  float4* const s_dyn = aligned_dyn_base(s_dyn_raw);
  __shared__ SharedState s;
#ifdef AMK_SM_CLAIM
  // The queue this block runs: the table's, or with claims the one ranked for the SM it landed on
  // (the placement moves between launches) or the next free one after it.
  __shared__ int s_worker;
  if (threadIdx.x == 0) {
    const int n = static_cast<int>(gridDim.x);
    int w = args.block_workers_in_args != 0 ? static_cast<int>(args.block_workers[blockIdx.x]) : static_cast<int>(blockIdx.x);
    if (args.sm_claims != nullptr) {
      const int sm = gpu::sm_id();
      const auto* first_queue = reinterpret_cast<const uint8_t*>(args.sm_claims + n);  // after the claims
      const int ranked = sm >= 0 && sm < kMaxSmIds ? static_cast<int>(first_queue[sm]) : n;
      w = claim_worker(args.sm_claims, args.step.epoch, ranked < n ? ranked : w, n);
    }
    s_worker = w;
  }
  __syncthreads();
  const int worker = s_worker;
  if (worker < 0) return;  // not reached (sm_claim.h): the launch then times out naming the queue
#else
  const int worker = args.block_workers_in_args != 0 ? static_cast<int>(args.block_workers[blockIdx.x])
                                                    : static_cast<int>(blockIdx.x);
#endif  // AMK_SM_CLAIM
  const int32_t* const bounds = args.queue_offsets_in_args != 0 ? args.queue_offsets : args.prog.sm_queue_offsets;
  const int32_t begin = bounds[worker];
  const int32_t end = bounds[worker + 1];
  if (threadIdx.x == 0) {
    if (args.worker_sm != nullptr) args.worker_sm[worker] = gpu::sm_id();  // traced: where each worker ran
    s.prog = args.prog;
    s.step = args.step;  // per-step values are fixed for the launch: a kernel parameter, no global read
    s.prog.step = &s.step;
    for (int i = 0; i < args.staged_tasks; ++i) {
      s.task_ready[i].init(gpu::kWarpSize);  // every loader lane releases the words it staged
      s.task_free[i].init(kComputeThreads);  // every compute thread releases its reads of the slot
    }
    s.quit.init();
#if AMK_HAVE_BULK_COPY
    if (streams(args)) {
      for (int i = 0; i < ring_view(args, s_dyn, s.ring_bar).slots; ++i) {
        gpu::mbarrier_init(&s.ring_bar[i]);
        s.ring_free[i].init(kComputeThreads);  // every compute thread releases its reads (run_streamed)
      }
    }
#ifdef AMK_FOLD_STREAM_LINK
    s.fold_ring = ring_view(args, s_dyn, s.ring_bar);
    s.fold_trace = ChunkTrace::of(args, worker);
#endif  // AMK_FOLD_STREAM_LINK
    gpu::mbarrier_init_fence();
#endif  // AMK_HAVE_BULK_COPY
  }
  __syncthreads();  // the whole block, once; from here on the compute warps meet on their own barrier
  if (threadIdx.x >= kComputeThreads) {
    loader_main(args, s, s_dyn, worker, begin, end);
    return;
  }
  constexpr bool kHasLoader = instructions::kLoaderWarps > 0;
  const amk_program_t& p = s.prog;
  DeviceCtx ctx{reinterpret_cast<float*>(s_dyn), args.work_floats, s.red};
  const uint32_t epoch = p.step->epoch;
#if AMK_HAVE_BULK_COPY
  const RingView ring = ring_view(args, s_dyn, s.ring_bar);
  int32_t consumed = 0;  // chunks consumed by the compute warps; the same in every compute thread
  const ChunkTrace chunk_trace = ChunkTrace::of(args, worker);
#endif  // AMK_HAVE_BULK_COPY
  RingIndex task_at{};  // task t's place among the task slots
  for (int32_t t = 0; t < end - begin; ++t, task_at.step(args.staged_tasks)) {
    const int32_t qi = begin + t;
    TaskSlot& slot = s.slot[task_at.slot];
    TaskTiming* rec = args.trace != nullptr ? &args.trace[qi] : nullptr;  // tracing off: one branch
    if constexpr (kHasLoader) {
      s.task_ready[task_at.slot].wait(task_at.lap);
    } else {  // stage, prefetch and wait ourselves
      stage_task(args, qi, slot, static_cast<int>(threadIdx.x), kComputeThreads);
      if (args.prefetch_depth > 0) prefetch_weights(p, slot.inst, static_cast<int>(threadIdx.x), kComputeThreads);
      instructions::compute_barrier();
      if (threadIdx.x == 0) {
        if (rec != nullptr) rec->t_wait_begin = gpu::global_timer_ns();
        slot.stop = wait_counters(p, slot.inst, epoch, args.poll_sleep_ns);
      }
      instructions::compute_barrier();
    }
#ifdef AMK_TRACE_PROBE
    // Set where the stamp below is taken, by the one thread that probes: a select on rec of its
    // own beside that store made nvcc 13.0's SASS store through a null rec (docs/TRACING.md).
    ctx.probe = nullptr;
#endif  // AMK_TRACE_PROBE
    if (threadIdx.x == 0 && rec != nullptr) {
      rec->t_run_begin = gpu::global_timer_ns();
#ifdef AMK_TRACE_PROBE
      ctx.probe = &rec->t_wait_begin;
#endif  // AMK_TRACE_PROBE
    }
    int32_t rc = slot.stop;
    const instructions::TaskBlobHeader* blob = &slot.header();
    ctx.blob = args.blobs != nullptr && blob->tag >= 0 && blob->op == slot.inst.op ? blob : nullptr;
#if AMK_HAVE_BULK_COPY
    int32_t free_after_release = -1;  // thread 0: the ring slot of this task's last chunk (run_streamed)
    int32_t last_slot = -1;           // run_streamed's
#endif  // AMK_HAVE_BULK_COPY
    if (rc == 0) {
#if AMK_HAVE_BULK_COPY
      int32_t before = consumed;
      if (slot.entry.bytes > 0) {  // the host made this task's blob a GemvPlan (upload_task_blobs)
#ifdef AMK_CHECK_STREAM_AT_RUN  // A/B: the compute warps check the task themselves, at its head
        if (threadIdx.x == 0) {
          check_streamed(args, slot);
          bind_streamed_step(p, slot, ctx.s_work);
        }
        instructions::compute_barrier();
#endif  // AMK_CHECK_STREAM_AT_RUN
        const instructions::GemvPlan& plan = slot.args<instructions::GemvPlan>();
        rc = slot.stream_rc != AMK_DEVERR_NONE ? slot.stream_rc
                                               : run_streamed(plan, slot.rows_per_chunk, ctx, ring, s.part, &consumed, &last_slot, s.ring_free,
                                                              chunk_trace);
      } else {
#ifdef AMK_FOLD_STREAM_LINK
        consumed += slot.fold_chunks;  // a fold on the weight stream (check_streamed)
        if constexpr (kFoldEagerFree) before = consumed;  // it freed its chunks itself
#endif  // AMK_FOLD_STREAM_LINK
#endif  // AMK_HAVE_BULK_COPY
        rc = instructions::device_execute(p, slot.inst, ctx);
#if AMK_HAVE_BULK_COPY
      }
      if (kDeferLastRingFree && consumed > before)  // a fold's chunks are counted, not walked: divide
        free_after_release = last_slot >= 0 ? last_slot : (consumed - 1) % ring.slots;
#endif  // AMK_HAVE_BULK_COPY
    }
    if (rc != 0) {  // uniform over the compute warps
      if (threadIdx.x == 0) {
        if (rc > 0 && gpu::atomic_cas(&p.error->code, 0, rc) == 0) {
          p.error->task = p.sm_queue[qi];
          p.error->detail = worker;
          __threadfence();
        }
        if constexpr (kHasLoader) s.quit.arrive();  // the loader stops issuing and drains the stream
      }
      return;
    }
    const int32_t out_counter = slot.inst.out_counter;  // read before the slot may be restaged
    // Every compute thread's output writes happen before the release below.
    gpu::named_barrier_release(instructions::kComputeBarrier, kComputeThreads);
    if (threadIdx.x == 0) {
      if (rec != nullptr) {  // before the release: a consumer's t_run_begin >= this t_end
        rec->t_end = gpu::global_timer_ns();
        rec->task = p.sm_queue[qi];
        rec->worker = worker;
      }
      if (out_counter >= 0 && out_counter < p.n_counters) gpu::atomic_add_release_gpu(&p.counters[out_counter], 1u);
#ifdef AMK_TRACE_RELEASE  // measurement only (row 90): t_end after the release, whose fence this then includes
      if (rec != nullptr) rec->t_end = gpu::global_timer_ns();
#endif  // AMK_TRACE_RELEASE
      gpu::store_relaxed_gpu(&args.progress[worker], t + 1);
#if AMK_HAVE_BULK_COPY
      if (free_after_release >= 0) s.ring_free[free_after_release].arrive();
#endif  // AMK_HAVE_BULK_COPY
    }
    // The slot may be restaged once every compute thread has released its own reads of it.
    if constexpr (kHasLoader) s.task_free[task_at.slot].arrive();
  }
}

/// The launch floor: a kernel that does nothing, launched as the persistent kernel is.
#ifndef AMK_KERNEL_TU_NS  // one empty kernel will do
bool kernel_claims_by_sm() {
#ifdef AMK_SM_CLAIM
  return true;
#else
  return false;
#endif  // AMK_SM_CLAIM
}

__global__ void __launch_bounds__(kBlockThreads, 1) amk_empty_kernel() {}

Status empty_kernel_launch(int workers, size_t dyn_smem, gpu::Stream stream) {
#ifdef AMK_USE_HIP
  AMK_GPU_TRY(hipLaunchCooperativeKernel(reinterpret_cast<const void*>(&amk_empty_kernel), dim3(workers),
                                         dim3(kBlockThreads), nullptr, static_cast<unsigned>(dyn_smem), stream));
#else
  AMK_GPU_TRY(cudaFuncSetAttribute(amk_empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(dyn_smem)));
  AMK_GPU_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&amk_empty_kernel), dim3(workers),
                                          dim3(kBlockThreads), nullptr, dyn_smem, stream));
#endif  // AMK_USE_HIP
  return Status::ok();
}
#endif  // AMK_KERNEL_TU_NS

Status kernel_resources(size_t dyn_smem, KernelResources* out) {
  int dev = 0;
  AMK_GPU_TRY(gpu::get_device(&dev));
#ifdef AMK_USE_HIP
  hipFuncAttributes fa{};
  AMK_GPU_TRY(hipFuncGetAttributes(&fa, reinterpret_cast<const void*>(&amk_persistent_kernel)));
  int optin = 0, sms = 0, coop = 0;
  // AMD has no shared-memory opt-in (HIP 5.2 documents hipDeviceAttributeSharedMemPerBlockOptin as
  // CUDA-only): a workgroup may use the whole per-block LDS limit (64 KiB on CDNA) as it is.
  AMK_GPU_TRY(gpu::device_attribute(&optin, hipDeviceAttributeMaxSharedMemoryPerBlock, dev));
  AMK_GPU_TRY(gpu::device_attribute(&sms, hipDeviceAttributeMultiprocessorCount, dev));
  AMK_GPU_TRY(gpu::device_attribute(&coop, hipDeviceAttributeCooperativeLaunch, dev));
  const int max_dyn = optin - static_cast<int>(fa.sharedSizeBytes);
  if (dyn_smem > static_cast<size_t>(max_dyn > 0 ? max_dyn : 0))
    return Status(StatusCode::Unsupported, "the persistent kernel wants " + std::to_string(dyn_smem) +
                                               " bytes of dynamic LDS; the device allows " + std::to_string(max_dyn));
  int blocks = 0;
  AMK_GPU_TRY(hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void*>(&amk_persistent_kernel),
                                                           kBlockThreads, dyn_smem));
#else
  cudaFuncAttributes fa{};
  AMK_GPU_TRY(cudaFuncGetAttributes(&fa, amk_persistent_kernel));
  int optin = 0, sms = 0, coop = 0;
  AMK_GPU_TRY(gpu::device_attribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  AMK_GPU_TRY(gpu::device_attribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  AMK_GPU_TRY(gpu::device_attribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  const int max_dyn = optin - static_cast<int>(fa.sharedSizeBytes);
  if (dyn_smem > static_cast<size_t>(max_dyn > 0 ? max_dyn : 0))
    return Status(StatusCode::Unsupported, "the persistent kernel wants " + std::to_string(dyn_smem) +
                                               " bytes of dynamic shared memory; the device allows " +
                                               std::to_string(max_dyn));
  AMK_GPU_TRY(cudaFuncSetAttribute(amk_persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(dyn_smem)));
  int blocks = 0;
  AMK_GPU_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, amk_persistent_kernel, kBlockThreads, dyn_smem));
#endif  // AMK_USE_HIP
  out->regs_per_thread = fa.numRegs;
  out->local_bytes_per_thread = static_cast<int>(fa.localSizeBytes);
  out->static_smem_bytes = static_cast<int>(fa.sharedSizeBytes);
  out->max_dyn_smem_bytes = optin - static_cast<int>(fa.sharedSizeBytes);
  out->blocks_per_sm = blocks;
  out->sm_count = sms;
  out->cooperative = coop != 0;
#ifdef AMK_USE_HIP
  out->binary_version = 0;
#else
  out->binary_version = fa.binaryVersion;
#endif  // AMK_USE_HIP
  return Status::ok();
}

Status kernel_launch(const KernelArgs& args, int workers, size_t dyn_smem, gpu::Stream stream) {
  KernelArgs a = args;
  void* params[] = {&a};
#ifdef AMK_USE_HIP
  AMK_GPU_TRY(hipLaunchCooperativeKernel(reinterpret_cast<const void*>(&amk_persistent_kernel), dim3(workers),
                                         dim3(kBlockThreads), params, static_cast<unsigned>(dyn_smem), stream));
#else
  AMK_GPU_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&amk_persistent_kernel), dim3(workers),
                                          dim3(kBlockThreads), params, dyn_smem, stream));
#endif  // AMK_USE_HIP
  return Status::ok();
}

#if defined(AMK_FOLD_KERNEL_TU)
}  // namespace AMK_KERNEL_TU_NS

KernelEntry fold_kernel() {
  return KernelEntry{"fold", &fold_tu::kernel_resources, &fold_tu::kernel_launch, kFoldStream, kAttentionRowStream,
                     kStepGemvStream};
}
#elif defined(AMK_ATTENTION_KERNEL_TU)
}  // namespace AMK_KERNEL_TU_NS

KernelEntry attention_kernel() {
  return KernelEntry{"attention", &attn_tu::kernel_resources, &attn_tu::kernel_launch, kFoldStream, kAttentionRowStream,
                     kStepGemvStream};
}
#elif defined(AMK_STEP_GEMV_KERNEL_TU)
}  // namespace AMK_KERNEL_TU_NS

KernelEntry step_gemv_kernel() {
  return KernelEntry{"rope", &rope_tu::kernel_resources, &rope_tu::kernel_launch, kFoldStream, kAttentionRowStream,
                     kStepGemvStream};
}
#else
KernelEntry default_kernel() {
  return KernelEntry{"default", &kernel_resources, &kernel_launch, kFoldStream, kAttentionRowStream, kStepGemvStream};
}
#ifdef AMK_USE_HIP  // no fold or attention kernel (their links are CUDA only)
KernelEntry fold_kernel() { return default_kernel(); }
KernelEntry attention_kernel() { return default_kernel(); }
KernelEntry step_gemv_kernel() { return default_kernel(); }
#endif  // AMK_USE_HIP
#endif  // AMK_FOLD_KERNEL_TU, AMK_ATTENTION_KERNEL_TU, AMK_STEP_GEMV_KERNEL_TU

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
