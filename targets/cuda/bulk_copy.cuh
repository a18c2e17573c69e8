// targets/cuda/bulk_copy.cuh: the sm_90 primitives behind the persistent kernel's shared-memory
// weight ring: a 1-D bulk copy global -> shared (cp.async.bulk, the TMA engine: one instruction
// moves a whole weight tile, with no registers or threads tied up while it is in flight) that
// completes on an mbarrier, and the barrier's init / expect-bytes / parity-wait operations.
// AMK_HAVE_BULK_COPY is 1 only when compiling device code for sm_90+; elsewhere (older CUDA archs,
// HIP) the ring is compiled out and the kernel streams weights from global memory.
#pragma once
#include "targets/gpu.h"

#if !defined(AMK_USE_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define AMK_HAVE_BULK_COPY 1
#else
#define AMK_HAVE_BULK_COPY 0
#endif  // sm_90

namespace amk::gpu {

#if AMK_HAVE_BULK_COPY
AMK_DEVICE uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

/// One thread: make `bar` a barrier of `arrivals` arrivals per phase. Follow the inits with one
/// mbarrier_init_fence() before the block's first barrier.
AMK_DEVICE void mbarrier_init(uint64_t* bar, uint32_t arrivals = 1) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
}
/// The initialising thread: make its mbarrier inits visible to the async proxy (bulk copies).
AMK_DEVICE void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

/// One thread: copy `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `src`
/// to shared `dst`; the current phase of `bar` completes when every byte has landed. The generic
/// proxy's earlier reads of `dst` (the previous tile, finished before a block barrier) are ordered
/// before the async-proxy writes by the proxy fence.
AMK_DEVICE void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

/// One thread: bulk_copy_to_shared for bytes that are read once per launch (the weight ring):
/// the copy carries an L2 evict-first policy, so the weight stream (far more bytes per stage than
/// L2 holds) is what L2 evicts first, not the kernel's code, the activations and the KV rows. A
/// profile of the 1B decode (docs/PERFORMANCE.md row 67) showed the small tasks (rope, KV append,
/// argmax) stalled on instruction fetch most of their time: the 2.7 MB kernel's code was cold.
/// -DAMK_NO_L2_EVICT_FIRST: no hint (A/B measurements).
AMK_DEVICE void bulk_copy_once_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#ifdef AMK_NO_L2_EVICT_FIRST
  bulk_copy_to_shared(dst, src, bytes, bar);
#else
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
#endif  // AMK_NO_L2_EVICT_FIRST
}

/// One thread: ask L2 for `bytes` (a multiple of 16) at global `src`, with nothing landing in this
/// SM: cp.async.bulk.prefetch.L2 has no shared-memory destination and no completion. Used by
/// tools/profiling/fence_probe.cu (`l2pf`): under every SM's load a release still slows with
/// prefetches in flight (1.46 us against 0.41 with none, 3.9 with bulk copies into shared memory;
/// docs/PERFORMANCE.md row 207).
AMK_DEVICE void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

/// One thread: arrive on `bar` (release at CTA scope: this thread's earlier writes, and those it
/// has observed, are visible to whoever sees the phase complete).
AMK_DEVICE void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

/// Any thread, without blocking: whether the phase of `bar` with parity `parity` has completed
/// (acquire at CTA scope when it has).
AMK_DEVICE bool mbarrier_test_parity(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

/// Any thread: one potentially blocking look (the hardware may suspend the thread for a while
/// if the phase is incomplete, freeing its issue slots); true once the phase with parity
/// `parity` has completed (acquire at CTA scope).
AMK_DEVICE bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

/// Any thread: wait until the phase of `bar` with parity `parity` has completed (the copy's bytes
/// are then visible to this thread). Bounded by the copy itself: no abort polling needed.
AMK_DEVICE void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}
#endif  // AMK_HAVE_BULK_COPY

}  // namespace amk::gpu
