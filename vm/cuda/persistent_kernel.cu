// vm/cuda/persistent_kernel.cu: the persistent megakernel. Block b is worker b: it walks
// sm_queue[sm_queue_offsets[b] .. sm_queue_offsets[b + 1]) in order. Per task: copy the
// instruction and the task's host-decoded operands (args.blobs, instructions/task_blob.h: the
// micro-kernels then skip their device decode) to shared memory; thread 0 tops up the weight
// stream (below) and waits until every counter reaches (epoch - 1) * producers[c] + threshold
// (relaxed polls, one acquire fence, rare checks of the device error slot and the host-mapped
// abort flag); the block runs the task; after a barrier thread 0 releases +1 on out_counter and
// records progress. The first error wins the slot (atomicCAS) and the block leaves; the others
// see the slot in their waits and leave too. Never __trap: it would kill the context and the
// executor could not report or continue.
//
// The weight stream (sm_90, args.ring_slots > 0): weights never depend on activations, so an SM
// can read its queue's weights long before the tasks that use them may run. The host lists, per
// queue slot, the weight bytes that task streams (args.stream, WeightStreamEntry); thread 0 walks
// that list as one continuous byte stream cut into chunks of whole rows, and keeps every ring
// slot busy with one bulk copy (TMA) per chunk, each completing on that slot's mbarrier. Tasks
// consume the chunks in the same order (gemv_stream_begin / gemv_stream_chunk, from a GemvPlan the
// host decoded, in the task's blob), and each freed slot is refilled at once, with the next
// chunk of this task or of a later one. So an SM's HBM
// stream does not stop at task boundaries, counter waits or stage barriers, and a task's size no
// longer decides how many bytes are in flight. Tasks whose weights do not fit the stream (odd
// layouts, batch > 1, rows longer than a slot) load them from global memory as before, with an
// optional L2 prefetch (args.prefetch_depth) when the ring is off.
#include "vm/cuda/persistent_kernel.h"

#include "instructions/device_dispatch.cuh"
#include "instructions/gemv_stream.cuh"
#include "targets/cuda/bulk_copy.cuh"
#include "targets/cuda/bulk_prefetch.cuh"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side (targets/gpu_vendor.h)
namespace {

using instructions::DeviceCtx;

/// Shared state of one worker block.
struct SharedState {
  amk_program_t prog;
  amk_instruction_t inst;
  float red[2 * gpu::kMaxWarps];
  int32_t stop;
  amk_step_t step;          ///< the launch's step block (read once; prog.step points here)
  WeightStreamEntry entry;  ///< the current task's share of the weight stream (bytes 0: none)
  /// The current task's host-decoded operands (instructions/task_blob.h).
  alignas(16) unsigned char blob[instructions::kTaskBlobBytes];
#if AMK_HAVE_BULK_COPY
  uint64_t ring_bar[kMaxRingSlots];  ///< one mbarrier per slot (8-byte aligned)
  float part[2][instructions::kStreamPartials];  ///< gemv_stream_chunk's partial sums, two buffers
#endif  // AMK_HAVE_BULK_COPY
};

/// Thread 0: wait for every counter of `inst`. Returns an error code (BAD_PARAMS for a counter
/// index outside the table) or -1 when the launch is being abandoned, 0 when the task may run.
/// The poll is a tight loop of relaxed loads of the counter alone (one acquire fence once every
/// counter is met): an acquire load per spin would invalidate this SM's L1 each time, and
/// reading the error slot and the host-mapped abort flag (a PCIe round trip) on every spin put
/// microseconds between a producer's release and its consumer noticing. Those two are checked
/// every kPollCheckEvery spins; only a long wait starts to sleep between polls.
__device__ int32_t wait_counters(const amk_program_t& p, const amk_instruction_t& inst, uint32_t epoch,
                                 uint32_t poll_sleep_ns) {
  constexpr uint32_t kPollCheckEvery = 256;  // spins between error-slot / abort-flag checks
  constexpr uint32_t kSpinsBeforeSleep = 4096;
  constexpr uint32_t kSleepNs = 128;
  if (inst.n_waits < 0 || inst.n_waits > AMK_MAX_WAITS) return AMK_DEVERR_BAD_PARAMS;
  for (int i = 0; i < inst.n_waits; ++i) {
    const int32_t c = inst.wait_counter[i];
    if (c < 0 || c >= p.n_counters) return AMK_DEVERR_BAD_PARAMS;
    const uint32_t target = (epoch - 1u) * p.counter_producers[c] + inst.wait_threshold[i];
    for (uint32_t spins = 1; gpu::load_relaxed_gpu(&p.counters[c]) < target; ++spins) {
      if (spins % kPollCheckEvery == 0) {
        if (gpu::load_volatile(&p.error->code) != 0) return -1;  // another block failed
        if (gpu::load_volatile(p.abort_flag) != 0) return -1;    // the host watchdog fired
      }
      if (poll_sleep_ns > 0) gpu::spin_pause(poll_sleep_ns);
      else if (spins > kSpinsBeforeSleep) gpu::spin_pause(kSleepNs);
    }
  }
  gpu::fence_acquire_gpu();
  return 0;
}

/// Warm L2 with the weights of queue entries [*next, limit), whole block.
__device__ void prefetch_weights(const amk_program_t& p, int32_t* next, int32_t limit) {
  for (; *next < limit; ++*next) {
    const void* ptr;
    uint64_t bytes;
    instructions::device_weight_range(p, p.instructions[p.sm_queue[*next]], &ptr, &bytes);
    if (bytes > 0) gpu::prefetch_l2(ptr, bytes, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
  }
}

#if AMK_HAVE_BULK_COPY
/// The ring in dynamic shared memory, the same in every thread. Chunks are numbered in stream
/// order; chunk n lives in slot n % slots and completes phase n / slots of that slot's mbarrier.
struct RingView {
  char* base;
  uint64_t* bars;
  int32_t slots, slot_bytes;

  __device__ char* slot(int32_t n) const { return base + static_cast<int64_t>(n % slots) * slot_bytes; }
  __device__ uint64_t* bar(int32_t n) const { return &bars[n % slots]; }
  /// Every calling thread: wait until chunk n has landed (its bytes are then visible to it).
  __device__ void wait(int32_t n) const { gpu::mbarrier_wait_parity(bar(n), (n / slots) & 1); }
};

/// The weight stream's producer, thread 0 only: walks the table of this worker's queue slots and
/// issues their chunks in order.
struct StreamProducer {
  const WeightStreamEntry* table;
  RingView ring;
  int32_t end;             ///< one past this worker's last queue slot
  int32_t q;               ///< queue slot whose chunks are being issued
  WeightStreamEntry cur;   ///< table[q]
  WeightStreamEntry next;  ///< table[q + 1], loaded one entry early (its latency hides behind q's chunks)
  uint32_t offset;         ///< bytes of cur already issued
  int32_t issued;          ///< chunks issued so far

  __device__ void start(const WeightStreamEntry* t, const RingView& r, int32_t begin, int32_t e) {
    table = t;
    ring = r;
    end = e;
    q = begin;
    offset = 0;
    issued = 0;
    cur = q < end ? table[q] : WeightStreamEntry{nullptr, 0, 0};
    next = q + 1 < end ? table[q + 1] : WeightStreamEntry{nullptr, 0, 0};
  }

  /// Issue chunks until `slots` are in flight beyond `consumed` or the queue's weights are all
  /// issued. An entry with chunk_bytes 0 is skipped (its task then refuses it: no hang).
  __device__ void top_up(int32_t consumed) {
    while (issued - consumed < ring.slots) {
      while (q < end && (offset >= cur.bytes || cur.chunk_bytes == 0)) {
        ++q;
        offset = 0;
        cur = next;
        next = q + 1 < end ? table[q + 1] : WeightStreamEntry{nullptr, 0, 0};
      }
      if (q >= end) return;
      const uint32_t left = cur.bytes - offset;
      const uint32_t n = left < cur.chunk_bytes ? left : cur.chunk_bytes;
      gpu::bulk_copy_to_shared(ring.slot(issued), static_cast<const char*>(cur.src) + offset, n, ring.bar(issued));
      offset += n;
      ++issued;
    }
  }

  /// Wait until every chunk issued beyond `consumed` has landed: no bulk copy may still be
  /// writing into this block's shared memory when the block leaves.
  __device__ void drain(int32_t consumed) {
    for (int32_t n = consumed; n < issued; ++n) ring.wait(n);
  }
};

/// Run a streamed GEMV-like task from its host-decoded `plan`: stage x, then consume its chunks
/// in order, refilling each freed slot. `consumed` is the block's count of consumed chunks (every
/// thread keeps the same value).
__device__ int32_t run_streamed(const instructions::GemvPlan& plan, const WeightStreamEntry& e, const DeviceCtx& ctx,
                                const RingView& ring, float (*part)[instructions::kStreamPartials],
                                StreamProducer& producer, int32_t* consumed) {
  const int64_t row_bytes = plan.mm.K * (instructions::dtype_bits(plan.mm.w.dtype) / 8);
  const int64_t cap = static_cast<int64_t>(ctx.work_floats) & ~int64_t{7};
  // The host admitted the task (gemv_stream_chunk_bytes); these are this code's own limits.
  if (row_bytes <= 0 || e.chunk_bytes % row_bytes != 0 || e.chunk_bytes > static_cast<uint32_t>(ring.slot_bytes) ||
      plan.mm.m_end - plan.mm.m_begin != 1 || plan.mm.K > cap)
    return AMK_DEVERR_BAD_PARAMS;
  const int64_t rows_per_chunk = e.chunk_bytes / row_bytes;
  if (rows_per_chunk > instructions::kStreamChunkMaxRows) return AMK_DEVERR_BAD_PARAMS;
  const float scale = instructions::gemv_stream_begin(plan, ctx);
  for (int64_t n0 = plan.mm.n_begin; n0 < plan.mm.n_end; n0 += rows_per_chunk) {
    const int64_t left = plan.mm.n_end - n0;
    const int32_t rows = static_cast<int32_t>(left < rows_per_chunk ? left : rows_per_chunk);
    const int32_t c = *consumed;
    ring.wait(c);  // every thread sees the bytes land
    instructions::gemv_stream_chunk(plan, ring.slot(c), n0, rows, scale, part[c & 1], ctx);
    *consumed = c + 1;  // gemv_stream_chunk's barrier: the slot is free
    if (threadIdx.x == 0) producer.top_up(*consumed);
  }
  return AMK_DEVERR_NONE;
}
#endif  // AMK_HAVE_BULK_COPY

}  // namespace

__global__ void __launch_bounds__(kBlockThreads, 1) amk_persistent_kernel(KernelArgs args) {
  extern __shared__ float4 s_dyn[];
  __shared__ SharedState s;
  const int worker = static_cast<int>(blockIdx.x);
  const int32_t begin = args.prog.sm_queue_offsets[worker];
  const int32_t end = args.prog.sm_queue_offsets[worker + 1];
#if AMK_HAVE_BULK_COPY
  const bool streaming = args.ring_slots > 0 && args.stream != nullptr && args.blobs != nullptr;
  const RingView ring{reinterpret_cast<char*>(s_dyn) + static_cast<int64_t>(args.work_floats) * 4, s.ring_bar,
                      args.ring_slots < kMaxRingSlots ? args.ring_slots : kMaxRingSlots, args.ring_slot_bytes};
  StreamProducer producer;  // meaningful in thread 0 only
  int32_t consumed = 0;     // chunks consumed by this block; the same in every thread
#endif  // AMK_HAVE_BULK_COPY
  if (threadIdx.x == 0) {
    s.prog = args.prog;
    s.step = *args.prog.step;  // per-step values are fixed for the launch: one read, then shared
    s.prog.step = &s.step;
    s.stop = 0;
#if AMK_HAVE_BULK_COPY
    if (streaming) {
      for (int i = 0; i < ring.slots; ++i) gpu::mbarrier_init(&s.ring_bar[i]);
      producer.start(args.stream, ring, begin, end);
    }
#endif  // AMK_HAVE_BULK_COPY
  }
  __syncthreads();
  const amk_program_t& p = s.prog;
  DeviceCtx ctx{reinterpret_cast<float*>(s_dyn), args.work_floats, s.red};
  const uint32_t epoch = p.step->epoch;
  int32_t prefetched = begin;
  for (int32_t qi = begin; qi < end; ++qi) {
    const int32_t task = p.sm_queue[qi];
    {  // the instruction, word by word, into shared memory
      const auto* src = reinterpret_cast<const int32_t*>(&p.instructions[task]);
      auto* dst = reinterpret_cast<int32_t*>(&s.inst);
      constexpr int kWords = static_cast<int>(sizeof(amk_instruction_t) / 4);
      for (int i = static_cast<int>(threadIdx.x); i < kWords; i += static_cast<int>(blockDim.x)) dst[i] = src[i];
      if (args.blobs != nullptr) {  // and the host-decoded operands, in the same round trip
        const auto* bsrc = reinterpret_cast<const int32_t*>(args.blobs + static_cast<int64_t>(qi) * instructions::kTaskBlobBytes);
        auto* bdst = reinterpret_cast<int32_t*>(s.blob);
        constexpr int kBlobWords = static_cast<int>(instructions::kTaskBlobBytes / 4);
        for (int i = static_cast<int>(threadIdx.x); i < kBlobWords; i += static_cast<int>(blockDim.x)) bdst[i] = bsrc[i];
      }
    }
    __syncthreads();
    if (args.prefetch_depth > 0 && args.ring_slots == 0) {  // the stream is the lookahead when on
      const int32_t limit = qi + args.prefetch_depth < end ? qi + args.prefetch_depth : end;
      prefetch_weights(p, &prefetched, limit);
    }
    TaskTiming* rec = args.trace != nullptr ? &args.trace[qi] : nullptr;  // tracing off: one branch
    if (threadIdx.x == 0) {
      if (rec != nullptr) rec->t_wait_begin = gpu::global_timer_ns();
      WeightStreamEntry entry{nullptr, 0, 0};
#if AMK_HAVE_BULK_COPY
      if (streaming) {
        entry = args.stream[qi];      // issued before the wait, used after it
        producer.top_up(consumed);    // the stream runs ahead through the wait below
      }
#endif  // AMK_HAVE_BULK_COPY
      s.stop = wait_counters(p, s.inst, epoch, args.poll_sleep_ns);
      s.entry = entry;
      if (rec != nullptr) rec->t_run_begin = gpu::global_timer_ns();
    }
    __syncthreads();
    int32_t rc = s.stop;
    const auto* blob = reinterpret_cast<const instructions::TaskBlobHeader*>(s.blob);
    ctx.blob = args.blobs != nullptr && blob->tag >= 0 && blob->op == s.inst.op ? blob : nullptr;
    if (rc == 0) {
#if AMK_HAVE_BULK_COPY
      if (s.entry.bytes > 0)  // the host made this task's blob a GemvPlan (upload_task_blobs)
        rc = ctx.blob == nullptr || ctx.blob->tag != instructions::TaskBlobTag<instructions::GemvPlan>::value
                 ? AMK_DEVERR_BAD_PARAMS
                 : run_streamed(*reinterpret_cast<const instructions::GemvPlan*>(ctx.blob + 1), s.entry, ctx, ring,
                                s.part, producer, &consumed);
      else
#endif  // AMK_HAVE_BULK_COPY
        rc = instructions::device_execute(p, s.inst, ctx);
    }
    const int32_t out_counter = s.inst.out_counter;
    if (rc != 0) {  // block-uniform
      if (threadIdx.x == 0 && rc > 0 && gpu::atomic_cas(&p.error->code, 0, rc) == 0) {
        p.error->task = task;
        p.error->detail = worker;
        __threadfence();
      }
#if AMK_HAVE_BULK_COPY
      if (threadIdx.x == 0 && streaming) producer.drain(consumed);
#endif  // AMK_HAVE_BULK_COPY
      return;
    }
    gpu::block_barrier_release();  // every thread's output writes happen before the release below
    if (threadIdx.x == 0) {
      if (rec != nullptr) {  // before the release: a consumer's t_run_begin >= this t_end
        rec->t_end = gpu::global_timer_ns();
        rec->task = task;
        rec->worker = worker;
      }
      if (out_counter >= 0 && out_counter < p.n_counters) gpu::atomic_add_release_gpu(&p.counters[out_counter], 1u);
      gpu::store_release_gpu(&args.progress[worker], qi - begin + 1);
    }
  }
}

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

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
