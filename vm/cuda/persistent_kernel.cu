// vm/cuda/persistent_kernel.cu: the persistent megakernel. Block b is worker b: it walks
// sm_queue[sm_queue_offsets[b] .. sm_queue_offsets[b + 1]) in order. Per task: copy the
// instruction to shared memory, warm L2 with the weight tiles of the next prefetch_depth GEMV
// tasks (legal before the wait: weights never depend on activations), thread 0 waits until every
// counter reaches (epoch - 1) * producers[c] + threshold (acquire loads, nanosleep backoff, polling
// the device error slot and the host-mapped abort flag), the block runs the micro-kernel, then
// after a barrier thread 0 releases +1 on out_counter and records progress. The first error wins
// the slot (atomicCAS) and the block leaves; the others see the slot in their waits and leave too.
// Never __trap: it would kill the context and the executor could not report or continue.
#include "vm/cuda/persistent_kernel.h"

#include "instructions/device_dispatch.cuh"
#include "targets/cuda/bulk_prefetch.cuh"

namespace amk::vm::gpuvm {
namespace {

using instructions::DeviceCtx;

/// Shared state of one worker block.
struct SharedState {
  amk_program_t prog;
  amk_instruction_t inst;
  float red[2 * gpu::kMaxWarps];
  int32_t stop;
};

/// Thread 0: wait for every counter of `inst`. Returns an error code (BAD_PARAMS for a counter
/// index outside the table) or -1 when the launch is being abandoned, 0 when the task may run.
__device__ int32_t wait_counters(const amk_program_t& p, const amk_instruction_t& inst, uint32_t epoch) {
  if (inst.n_waits < 0 || inst.n_waits > AMK_MAX_WAITS) return AMK_DEVERR_BAD_PARAMS;
  for (int i = 0; i < inst.n_waits; ++i) {
    const int32_t c = inst.wait_counter[i];
    if (c < 0 || c >= p.n_counters) return AMK_DEVERR_BAD_PARAMS;
    const uint32_t target = (epoch - 1u) * p.counter_producers[c] + inst.wait_threshold[i];
    uint32_t ns = 32;
    for (uint32_t spins = 0; gpu::load_acquire_gpu(&p.counters[c]) < target; ++spins) {
      if (gpu::load_volatile(&p.error->code) != 0) return -1;           // device memory: cheap
      if ((spins & 15u) == 15u && gpu::load_volatile(p.abort_flag) != 0) return -1;  // over PCIe
      gpu::spin_pause(ns);
      ns = ns < 1024u ? ns * 2u : 1024u;
    }
  }
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

}  // namespace

__global__ void __launch_bounds__(kBlockThreads, 1) amk_persistent_kernel(KernelArgs args) {
  extern __shared__ float4 s_dyn[];
  __shared__ SharedState s;
  if (threadIdx.x == 0) {
    s.prog = args.prog;
    s.stop = 0;
  }
  __syncthreads();
  const amk_program_t& p = s.prog;
  const DeviceCtx ctx{reinterpret_cast<float*>(s_dyn), args.work_floats, s.red};
  const int worker = static_cast<int>(blockIdx.x);
  const int32_t begin = p.sm_queue_offsets[worker];
  const int32_t end = p.sm_queue_offsets[worker + 1];
  const uint32_t epoch = p.step->epoch;
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
    if (args.prefetch_depth > 0) {
      const int32_t limit = qi + args.prefetch_depth < end ? qi + args.prefetch_depth : end;
      prefetch_weights(p, &prefetched, limit);
    }
    if (threadIdx.x == 0) s.stop = wait_counters(p, s.inst, epoch);
    __syncthreads();
    int32_t rc = s.stop;
    if (rc == 0) rc = instructions::device_execute(p, s.inst, ctx);
    const int32_t out_counter = s.inst.out_counter;
    if (rc != 0) {  // block-uniform
      if (threadIdx.x == 0 && rc > 0 && gpu::atomic_cas(&p.error->code, 0, rc) == 0) {
        p.error->task = task;
        p.error->detail = worker;
        __threadfence();
      }
      return;
    }
    __syncthreads();  // every thread's output writes happen before the release below
    if (threadIdx.x == 0) {
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
  AMK_GPU_TRY(gpu::device_attribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, dev));
  AMK_GPU_TRY(gpu::device_attribute(&sms, hipDeviceAttributeMultiprocessorCount, dev));
  AMK_GPU_TRY(gpu::device_attribute(&coop, hipDeviceAttributeCooperativeLaunch, dev));
  if (dyn_smem > 0)
    AMK_GPU_TRY(hipFuncSetAttribute(reinterpret_cast<const void*>(&amk_persistent_kernel),
                                    hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dyn_smem)));
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

}  // namespace amk::vm::gpuvm
