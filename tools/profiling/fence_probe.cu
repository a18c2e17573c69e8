// tools/profiling/fence_probe.cu (amk-fence-probe): does a task's release wait for the SM's bulk
// copies in flight? The megakernel ends every task with thread 0's red.release.gpu on its
// counter (MEMBAR + atomic). In a trace, that release took 1.7 us after the q / k / v tasks and
// 0.6-0.9 after the others, and it fell to ~0.5 us when the weight ring's refills were held back
// (docs/PERFORMANCE.md row 90). So either the fence waits for the bulk copies the loader warp has
// in flight, or for memory traffic they queue ahead of it. Each block of this probe runs, per
// repetition: a store (a task's output), then thread 0's timed red.release.gpu, while
//   none     no bulk copy is in flight;
//   other    another warp (the loader's role) has just issued two 64 KiB bulk copies from HBM;
//   self     thread 0 has issued them itself;
//   async    another warp has the same 128 KiB in flight as 16-byte cp.async copies (LDGSTS, the
//            generic proxy's asynchronous copy: no bulk-copy engine);
//   l2pf     another warp has asked L2 for the same 128 KiB (cp.async.bulk.prefetch.L2: no shared
//            memory destination), as a loader could at a task's end instead of its refill.
// Each mode is timed with several release flavours (what ptxas makes of them on sm_90a):
//   rel      red.release.gpu (MEMBAR.ALL.GPU, ERRBAR, RED): the megakernel's release;
//   sc       fence.sc.gpu + red.relaxed.gpu (MEMBAR.SC.GPU, ERRBAR, CCTL.IVALL): also a release;
//   cta      fence.acq_rel.cta + red.relaxed.gpu (MEMBAR.ALL.CTA): NOT a release to other SMs;
//   proxy    fence.proxy.async.global + red.relaxed.gpu (FENCE.VIEW.ASYNC.G): NOT a release;
//   none     red.relaxed.gpu alone: NOT a release.
// The last three are diagnostics (which part of the release waits), never a protocol.
// on one SM alone, and on every SM at once (the decode's load: every SM streams). Printed: the
// median release time in cycles and us (SM clock), and the median landing time of the copies.
// If "other" is slower than "none", a release pays for copies it does not order, and a release
// that does not wait for them (PERFORMANCE "What would close the gap") is worth looking for.
// After the release, thread 0 also times a loader's counter poll as the megakernel issues it
// (poll_counters: ld.relaxed.gpu of a counter in its own 128-byte line, then fence.acquire.gpu):
// the poll's round trip and the fence, each alone, while the copies are still landing. A hop
// waits on one such poll after the last producer's release (row 153): if "other" is much slower
// than "none" here, the ring's traffic is what lengthens a hop's poll.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define PROBE_NAME "amk-fence-probe"
#include "tools/profiling/probe_check.h"

#include "targets/cuda/bulk_copy.cuh"

namespace {

constexpr int kThreads = 64;               // warp 0: the task's thread 0; warp 1: the loader
constexpr uint32_t kCopyBytes = 64 << 10;  // one ring slot
constexpr int kCopies = 2;                 // the ring's two slots
constexpr int kReps = 64;
constexpr int kFlagStride = 32;            // one counter per 128-byte line, as the megakernel's

enum Mode { kNone = 0, kOther = 1, kSelf = 2, kAsync = 3, kL2Prefetch = 4 };
enum Flavour { kRel = 0, kSc = 1, kCta = 2, kProxy = 3, kRelaxed = 4 };

#if AMK_HAVE_BULK_COPY
/// Thread 0's counter bump in one of the flavours above.
__device__ __forceinline__ void bump(uint32_t* counter, int flavour) {
  switch (flavour) {
    case kRel: asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory"); break;
    case kSc: asm volatile("fence.sc.gpu;\n\tred.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory"); break;
    case kCta: asm volatile("fence.acq_rel.cta;\n\tred.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory"); break;
    case kProxy: asm volatile("fence.proxy.async.global;\n\tred.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory"); break;
    default: asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(1u) : "memory"); break;
  }
}
#endif  // AMK_HAVE_BULK_COPY (the kernel's only caller is compiled for sm_90+)

struct Sample {
  long long release;  ///< cycles of thread 0's counter bump in the run's flavour (bump)
  long long land;     ///< cycles from the copies' issue to their landing (0: none issued)
  long long poll;     ///< cycles of thread 0's ld.relaxed.gpu of its flag, value consumed
  long long acquire;  ///< cycles of the fence.acquire.gpu after it
};

__global__ void __launch_bounds__(kThreads, 1)
    fence_probe(const char* src, size_t src_bytes, size_t base, uint32_t* counter, uint32_t* out, const uint32_t* flags,
                int mode, int flavour, Sample* samples) {
#if AMK_HAVE_BULK_COPY
  extern __shared__ __align__(128) char ring[];
  __shared__ uint64_t bars[kCopies];
  __shared__ long long issued_at;
  __shared__ volatile uint32_t sink;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    for (int i = 0; i < kCopies; ++i) amk::gpu::mbarrier_init(&bars[i]);
    amk::gpu::mbarrier_init_fence();
  }
  __syncthreads();
  const int issuer = mode == kSelf ? 0 : 32;
  for (int rep = 0; rep < kReps; ++rep) {
    if (mode != kNone && t == issuer) {
      // Cold bytes: every block and repetition reads its own 128 KiB of a buffer far beyond L2.
      const size_t at = (base + (static_cast<size_t>(blockIdx.x) * kReps + rep) * kCopies * kCopyBytes) % src_bytes;
      issued_at = clock64();
      if (mode == kL2Prefetch)
        for (int i = 0; i < kCopies; ++i)
          amk::gpu::bulk_prefetch_l2(src + at + i * kCopyBytes, kCopyBytes);
      else if (mode != kAsync)
        for (int i = 0; i < kCopies; ++i)
          amk::gpu::bulk_copy_to_shared(ring + i * kCopyBytes, src + at + i * kCopyBytes, kCopyBytes, &bars[i]);
    }
    if (mode == kAsync && t >= 32) {  // the whole second warp: 256 copies of 16 bytes per lane
      const size_t at = (base + (static_cast<size_t>(blockIdx.x) * kReps + rep) * kCopies * kCopyBytes) % src_bytes;
      for (uint32_t off = (t - 32) * 16u; off < kCopies * kCopyBytes; off += 32u * 16u)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(amk::gpu::smem_addr(ring + off)), "l"(src + at + off)
                     : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    __syncthreads();  // the copies are in flight before the release starts
    if (t == 0) {
      out[blockIdx.x] = static_cast<uint32_t>(rep);  // the task's output, which the release orders
      const long long t0 = clock64();
      // A fence holds the warp until what it orders is performed, so the clock after it covers
      // the fence (the red itself is fire-and-forget).
      bump(counter, flavour);
      const long long t1 = clock64();
      samples[blockIdx.x * kReps + rep].release = t1 - t0;
      // The poll: a relaxed load from L2 (it bypasses L1), its value consumed before the clock is
      // read again, then the acquire fence a met counter takes (an L1 invalidate on sm_90).
      const uint32_t* flag = flags + blockIdx.x * kFlagStride;
      uint32_t v;
      const long long t2 = clock64();
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
      sink = v;  // a store of the value: the clock below waits for the load to return
      const long long t3 = clock64();
      asm volatile("fence.acquire.gpu;" ::: "memory");
      const long long t4 = clock64();
      samples[blockIdx.x * kReps + rep].poll = t3 - t2;
      samples[blockIdx.x * kReps + rep].acquire = t4 - t3;
    }
    if (mode == kAsync && t >= 32) {
      asm volatile("cp.async.wait_all;" ::: "memory");
      if (t == issuer) samples[blockIdx.x * kReps + rep].land = clock64() - issued_at;
    } else if (mode == kL2Prefetch && t == issuer) {
      samples[blockIdx.x * kReps + rep].land = 0;  // a prefetch has no completion to wait for
    } else if (mode != kNone && t == issuer) {
      for (int i = 0; i < kCopies; ++i) amk::gpu::mbarrier_wait_parity(&bars[i], static_cast<uint32_t>(rep & 1));
      samples[blockIdx.x * kReps + rep].land = clock64() - issued_at;
    } else if (mode == kNone && t == 0) {
      samples[blockIdx.x * kReps + rep].land = 0;
    }
    __syncthreads();  // the slots are free again
  }
#else
  (void)src, (void)src_bytes, (void)base, (void)counter, (void)out, (void)flags, (void)mode, (void)flavour, (void)samples;
#endif  // AMK_HAVE_BULK_COPY
}

long long median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main() {
  int dev = 0, khz = 0;
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));  // the SM clock: cycles -> us
  const int sms = prop.multiProcessorCount;
  if (prop.major < 9) {
    std::fprintf(stderr, "%s: needs sm_90 (bulk copies); %s is sm_%d%d\n", PROBE_NAME, prop.name, prop.major, prop.minor);
    return 1;
  }
  const size_t src_bytes = size_t{1} << 31;  // 2 GiB: 40x the L2
  char* src = nullptr;
  uint32_t *counter = nullptr, *out = nullptr, *flags = nullptr;
  Sample* samples = nullptr;
  PROBE_CHECK(cudaMalloc(&src, src_bytes));
  PROBE_CHECK(cudaMemset(src, 1, src_bytes));
  PROBE_CHECK(cudaMalloc(&counter, sizeof(uint32_t)));
  PROBE_CHECK(cudaMalloc(&out, sizeof(uint32_t) * sms));
  PROBE_CHECK(cudaMalloc(&flags, sizeof(uint32_t) * kFlagStride * sms));
  PROBE_CHECK(cudaMemset(flags, 0, sizeof(uint32_t) * kFlagStride * sms));
  PROBE_CHECK(cudaMalloc(&samples, sizeof(Sample) * sms * kReps));
  const int smem = kCopies * static_cast<int>(kCopyBytes);
  PROBE_CHECK(cudaFuncSetAttribute(fence_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::printf("%s on %s (%d SMs, %.2f GHz): thread 0's counter bump (the release column's flavour), then a\n"
              "counter poll (ld.relaxed.gpu + fence.acquire.gpu), with 2 x 64 KiB in flight or not; medians (SM clock)\n",
              PROBE_NAME, prop.name, sms, khz / 1e6);
  std::printf("%-6s %-6s %-7s %10s %9s %9s %9s %14s\n", "blocks", "mode", "release", "cycles", "us", "poll us",
              "acq us", "copies land us");
  const char* names[] = {"none", "other", "self", "async", "l2pf"};
  const char* flavours[] = {"rel", "sc", "cta", "proxy", "none"};
  struct Run { int mode, flavour; };
  std::vector<Run> runs;
  for (int mode : {kNone, kOther, kSelf, kAsync, kL2Prefetch}) runs.push_back({mode, kRel});
  for (int flavour : {kSc, kCta, kProxy, kRelaxed})
    for (int mode : {kNone, kOther, kL2Prefetch}) runs.push_back({mode, flavour});
  for (int blocks : {1, sms}) {
    for (const Run& r : runs) {
      const int mode = r.mode, flavour = r.flavour;
      PROBE_CHECK(cudaMemset(counter, 0, sizeof(uint32_t)));
      // A warm-up launch (code, TLB), then the timed one on other bytes: its copies come from HBM.
      fence_probe<<<blocks, kThreads, smem>>>(src, src_bytes, 0, counter, out, flags, mode, flavour, samples);
      fence_probe<<<blocks, kThreads, smem>>>(src, src_bytes, src_bytes / 2, counter, out, flags, mode, flavour, samples);
      PROBE_CHECK(cudaGetLastError());
      PROBE_CHECK(cudaDeviceSynchronize());
      std::vector<Sample> h(static_cast<size_t>(blocks) * kReps);
      PROBE_CHECK(cudaMemcpy(h.data(), samples, sizeof(Sample) * h.size(), cudaMemcpyDeviceToHost));
      std::vector<long long> rel, land, poll, acq;
      for (size_t i = 0; i < h.size(); ++i) {
        if (i % kReps == 0) continue;  // each block's first repetition: cold code
        rel.push_back(h[i].release);
        land.push_back(h[i].land);
        poll.push_back(h[i].poll);
        acq.push_back(h[i].acquire);
      }
      const double us = 1e3 * khz / 1e6;  // cycles per us
      std::printf("%-6d %-6s %-7s %10lld %9.3f %9.3f %9.3f %14.3f\n", blocks, names[mode], flavours[flavour], median(rel), median(rel) / us,
                  median(poll) / us, median(acq) / us, median(land) / us);
    }
  }
  PROBE_CHECK(cudaFree(src));
  PROBE_CHECK(cudaFree(counter));
  PROBE_CHECK(cudaFree(out));
  PROBE_CHECK(cudaFree(flags));
  PROBE_CHECK(cudaFree(samples));
  return 0;
}
