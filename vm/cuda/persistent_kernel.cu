// vm/cuda/persistent_kernel.cu: the persistent megakernel. Block b is worker b: it walks
// sm_queue[sm_queue_offsets[b] .. sm_queue_offsets[b + 1]) in order. Per task: copy the
// instruction to shared memory; thread 0 tops up the weight ring (below) and waits until every
// counter reaches (epoch - 1) * producers[c] + threshold (acquire loads, nanosleep backoff, polling
// the device error slot and the host-mapped abort flag); the block runs the micro-kernel; after a
// barrier thread 0 releases +1 on out_counter and records progress. The first error wins the slot
// (atomicCAS) and the block leaves; the others see the slot in their waits and leave too. Never
// __trap: it would kill the context and the executor could not report or continue.
//
// The weight ring (sm_90, args.ring_slots > 0): weights never depend on activations, so the
// weight tile of an upcoming GEMV-like task can be copied into shared memory before its counters
// are met. Thread 0 keeps up to ring_slots tiles in flight, in queue order, with one bulk copy
// (TMA) per tile completing on that slot's mbarrier; the task that owns a slot waits on the
// barrier's parity and reads its weights from shared memory. So the HBM stream of an SM continues
// through counter waits, stage boundaries and the per-task overhead, instead of starting only once
// a task may run. Tiles that are not eligible (gemv_ring_eligible) or larger than a slot stream
// from global memory, with an optional L2 prefetch (args.prefetch_depth) as before.
#include "vm/cuda/persistent_kernel.h"

#include "instructions/device_dispatch.cuh"
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
  int32_t slot;  ///< ring slot holding the current task's weights, -1 = read them from global
  uint32_t slot_parity;  ///< parity of the phase to wait for on that slot
#if AMK_HAVE_BULK_COPY
  uint64_t ring_bar[kMaxRingSlots];  ///< one mbarrier per slot (8-byte aligned)
#endif  // AMK_HAVE_BULK_COPY
};

/// Thread 0: wait for every counter of `inst`. Returns an error code (BAD_PARAMS for a counter
/// index outside the table) or -1 when the launch is being abandoned, 0 when the task may run.
/// The poll is a tight loop of relaxed loads of the counter alone (one acquire fence once every
/// counter is met): an acquire load per spin would invalidate this SM's L1 each time, and
/// reading the error slot and the host-mapped abort flag (a PCIe round trip) on every spin put
/// microseconds between a producer's release and its consumer noticing. Those two are checked
/// every kPollCheckEvery spins; only a long wait starts to sleep between polls.
__device__ int32_t wait_counters(const amk_program_t& p, const amk_instruction_t& inst, uint32_t epoch) {
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
      if (spins > kSpinsBeforeSleep) gpu::spin_pause(kSleepNs);
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

/// Thread 0's view of the weight ring: tiles are issued and consumed in queue order, slot
/// `n % slots` for the n-th eligible task. A task's tile is issued before the task is reached
/// (at most `slots` ahead), so when task qi runs, its tile is the oldest one in flight.
struct Ring {
  int32_t slots = 0;
  int32_t slot_bytes = 0;
  int32_t issued = 0, consumed = 0;  ///< tiles issued / tiles whose task finished
  int32_t next = 0;                  ///< next queue index to consider
  int32_t owner[kMaxRingSlots];      ///< queue index whose tile is in each slot
};

#if AMK_HAVE_BULK_COPY
/// Thread 0: issue tiles for queue entries [ring.next, limit) while a slot is free.
__device__ void ring_top_up(const amk_program_t& p, Ring& ring, char* ring_base, uint64_t* bars, int32_t limit) {
  while (ring.issued - ring.consumed < ring.slots && ring.next < limit) {
    const void* src;
    uint64_t bytes;
    instructions::device_ring_tile(p, p.instructions[p.sm_queue[ring.next]], &src, &bytes);
    if (bytes > 0 && bytes <= static_cast<uint64_t>(ring.slot_bytes)) {
      const int32_t slot = ring.issued % ring.slots;
      gpu::bulk_copy_to_shared(ring_base + static_cast<int64_t>(slot) * ring.slot_bytes, src,
                               static_cast<uint32_t>(bytes), &bars[slot]);
      ring.owner[slot] = ring.next;
      ++ring.issued;
    }
    ++ring.next;
  }
}
#endif  // AMK_HAVE_BULK_COPY

}  // namespace

__global__ void __launch_bounds__(kBlockThreads, 1) amk_persistent_kernel(KernelArgs args) {
  extern __shared__ float4 s_dyn[];
  __shared__ SharedState s;
  const int worker = static_cast<int>(blockIdx.x);
  Ring ring;  // meaningful in thread 0 only
#if AMK_HAVE_BULK_COPY
  ring.slots = args.ring_slots < kMaxRingSlots ? args.ring_slots : kMaxRingSlots;
  ring.slot_bytes = args.ring_slot_bytes;
#endif  // AMK_HAVE_BULK_COPY
  if (threadIdx.x == 0) {
    s.prog = args.prog;
    s.stop = 0;
#if AMK_HAVE_BULK_COPY
    for (int i = 0; i < ring.slots; ++i) gpu::mbarrier_init(&s.ring_bar[i]);
#endif  // AMK_HAVE_BULK_COPY
  }
  __syncthreads();
  const amk_program_t& p = s.prog;
  [[maybe_unused]] char* const ring_base = reinterpret_cast<char*>(s_dyn) + static_cast<int64_t>(args.work_floats) * 4;
  DeviceCtx ctx{reinterpret_cast<float*>(s_dyn), args.work_floats, s.red};
  const int32_t begin = p.sm_queue_offsets[worker];
  const int32_t end = p.sm_queue_offsets[worker + 1];
  const uint32_t epoch = p.step->epoch;
  ring.next = begin;
  [[maybe_unused]] uint32_t parity_bits = 0;  // thread 0: bit i = parity of slot i's next phase
  int32_t prefetched = begin;
  for (int32_t qi = begin; qi < end; ++qi) {
    const int32_t task = p.sm_queue[qi];
    {  // the instruction, word by word, into shared memory
      const auto* src = reinterpret_cast<const int32_t*>(&p.instructions[task]);
      auto* dst = reinterpret_cast<int32_t*>(&s.inst);
      constexpr int kWords = static_cast<int>(sizeof(amk_instruction_t) / 4);
      for (int i = static_cast<int>(threadIdx.x); i < kWords; i += static_cast<int>(blockDim.x)) dst[i] = src[i];
    }
    __syncthreads();
    if (args.prefetch_depth > 0 && args.ring_slots == 0) {  // the ring is the lookahead when on
      const int32_t limit = qi + args.prefetch_depth < end ? qi + args.prefetch_depth : end;
      prefetch_weights(p, &prefetched, limit);
    }
    TaskTiming* rec = args.trace != nullptr ? &args.trace[qi] : nullptr;  // tracing off: one branch
    if (threadIdx.x == 0) {
      if (rec != nullptr) rec->t_wait_begin = gpu::global_timer_ns();
      s.slot = -1;
#if AMK_HAVE_BULK_COPY
      if (ring.slots > 0) {
        // Look ahead as far as the ring allows: the next `slots` eligible tiles, skipping others.
        ring_top_up(p, ring, ring_base, s.ring_bar, end);
        const int32_t head = ring.consumed % ring.slots;
        if (ring.consumed < ring.issued && ring.owner[head] == qi) {
          s.slot = head;
          s.slot_parity = (parity_bits >> head) & 1u;
        }
      }
#endif  // AMK_HAVE_BULK_COPY
      s.stop = wait_counters(p, s.inst, epoch);
      if (rec != nullptr) rec->t_run_begin = gpu::global_timer_ns();
    }
    __syncthreads();
    int32_t rc = s.stop;
    const int32_t slot = s.slot;
#if AMK_HAVE_BULK_COPY
    if (slot >= 0) {  // every thread observes the copy's completion itself (visibility of the bytes)
      gpu::mbarrier_wait_parity(&s.ring_bar[slot], s.slot_parity);
      ctx.w_tile = ring_base + static_cast<int64_t>(slot) * args.ring_slot_bytes;
    }
#endif  // AMK_HAVE_BULK_COPY
    if (rc == 0) rc = instructions::device_execute(p, s.inst, ctx);
    ctx.w_tile = nullptr;
    const int32_t out_counter = s.inst.out_counter;
    if (rc != 0) {  // block-uniform
      if (threadIdx.x == 0 && rc > 0 && gpu::atomic_cas(&p.error->code, 0, rc) == 0) {
        p.error->task = task;
        p.error->detail = worker;
        __threadfence();
      }
#if AMK_HAVE_BULK_COPY
      // Leave no bulk copy in flight into this block's shared memory.
      if (threadIdx.x == 0)
        for (int32_t n = ring.consumed + (slot >= 0 ? 1 : 0); n < ring.issued; ++n) {
          const int32_t sl = n % ring.slots;
          gpu::mbarrier_wait_parity(&s.ring_bar[sl], (parity_bits >> sl) & 1u);
          parity_bits ^= 1u << sl;
        }
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
      if (slot >= 0) {  // the slot's reads are done (barrier above): it may take the next tile
        parity_bits ^= 1u << slot;
        ++ring.consumed;
      }
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
