// vm/cuda/stage_handoff.cuh: a one-way signal with numbered phases, from some threads of the
// persistent block to others: the loader warp tells the compute warps that a staged task may run,
// and they tell it that a task slot or a ring slot is free again. Phase k (k = 0, 1, ...) completes
// once the signalling threads have all arrived on it; arrive() releases and a successful test()
// acquires, at block scope, so what each signalling thread wrote before it arrived is visible to
// the side that saw the phase complete.
//
// sm_90: an mbarrier. Besides being the hardware's own primitive for
// this, it is what compute-sanitizer racecheck understands as synchronisation: a release store /
// acquire load pair on a shared word is just as correct by the PTX memory model, but racecheck
// reports every access it orders as a hazard. An mbarrier only keeps the parity of its current
// phase, so test(k) is meaningful while the signaller is at most one phase ahead of phase k,
// which each use guarantees (a slot is refilled only after it was freed, and freed only after it
// was filled). Elsewhere (older CUDA archs, HIP): a counter of arrivals, fence + atomic / acquire.
#pragma once
#include "targets/cuda/bulk_copy.cuh"
#include "targets/gpu.h"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {

struct StageHandoff {
#if AMK_HAVE_BULK_COPY
  uint64_t bar;

  /// One thread, before the block's first barrier: `arrivals` arrive() calls complete a phase.
  __device__ void init(uint32_t arrivals = 1) { gpu::mbarrier_init(&bar, arrivals); }
  /// One of the signalling threads: arrive on the current phase, releasing this thread's writes.
  __device__ void arrive() { gpu::mbarrier_arrive(&bar); }
  /// Any thread, without blocking: whether phase k has completed. A completed test is confirmed
  /// by a try_wait, which returns at once on a completed phase: compute-sanitizer racecheck
  /// records try_wait as the acquiring side of an mbarrier (its --racecheck-trace-sync shows
  /// "barrier wait" for try_wait and nothing for test_wait), so without it every write the
  /// loader makes after a test() would be reported as racing the compute warps' earlier reads.
  __device__ bool test(uint32_t k) {
    return gpu::mbarrier_test_parity(&bar, k & 1u) && gpu::mbarrier_try_wait_parity(&bar, k & 1u);
  }
  /// Any thread: wait until phase k has completed, suspended in hardware between looks.
  __device__ void wait(uint32_t k) { gpu::mbarrier_wait_parity(&bar, k & 1u); }
#else
  int32_t arrived;
  int32_t arrivals;

  __device__ void init(uint32_t n = 1) {
    arrived = 0;
    arrivals = static_cast<int32_t>(n);
  }
  __device__ void arrive() {
    __threadfence_block();  // with the atomic: a release of this thread's writes
    atomicAdd(&arrived, 1);
  }
  __device__ bool test(uint32_t k) {
    return gpu::load_acquire_cta(&arrived) >= (static_cast<int32_t>(k) + 1) * arrivals;
  }
  /// Any thread: wait until phase k has completed (the signaller is never blocked on this thread).
  __device__ void wait(uint32_t k) {
    while (!test(k)) {
    }
  }
#endif  // AMK_HAVE_BULK_COPY
};

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
