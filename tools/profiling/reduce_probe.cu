// tools/profiling/reduce_probe.cu (amk-reduce-probe): what a cross-SM sum of one vector costs, the
// price of folding down_proj into the gate / up stage (docs/PERFORMANCE.md, "What would close the
// gap", session 29). There, every gate / up task would end with its own partial sums of all N
// outputs of down (N = hidden size, 2048 on Llama-3.2-1B) and the sums of all tasks are needed by
// the next stage. Every block of this probe (one per SM, 352 threads: the megakernel's compute
// warps) holds such a partial vector and, after a grid-wide start, contributes it by
//   red      one red.global.add.f32 per element into an F32 accumulator;
//   red4     one red.global.add.v4.f32 per 4 elements (sm_90);
//   store    plain 16-byte stores into its own row of a [blocks][N] partials buffer (the write side
//            of a deterministic sum);
//   sum      reading every block's row of that buffer and adding them in a fixed order (the read
//            side, which every consumer SM of a deterministic sum would pay);
// then thread 0's release fence. Printed per mode: the median over launches of the span from the
// first block's start to the last block's fence (what a stage would wait for), and of one block's
// own time; once on an idle machine and once while a 12th warp of every block keeps two 64 KiB
// bulk copies from HBM in flight (the megakernel's weight ring: every SM streams). The red and
// sum modes are checked: the results must be the exact sums (small integers).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define PROBE_NAME "amk-reduce-probe"
#include "tools/profiling/probe_check.h"

#include "targets/cuda/bulk_copy.cuh"

namespace {

constexpr int kThreads = 352;                  // the adding warps
constexpr int kStreamThreads = kThreads + 32;  // and the streaming warp
constexpr uint32_t kCopyBytes = 64 << 10;      // one ring slot
constexpr int kLaunches = 21;

enum Mode { kRed = 0, kRed4 = 1, kStore = 2, kSum = 3 };

__device__ unsigned long long timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Block b's partial sum of element i: a small integer, so that any order of F32 adds is exact.
__device__ float partial(int b, int i) { return static_cast<float>((b + i) % 7 + 1); }

/// Thread t of the streaming warp (blockDim.x > kThreads): two 64 KiB bulk copies from HBM in
/// flight until *done; each block and launch reads its own bytes of `src` (far beyond L2).
__device__ void stream_until_done(int t, const char* src, size_t src_bytes, size_t base, volatile int* done) {
#if AMK_HAVE_BULK_COPY
  extern __shared__ __align__(128) char ring[];
  __shared__ uint64_t bars[2];
  if (t != kThreads) return;
  for (int i = 0; i < 2; ++i) amk::gpu::mbarrier_init(&bars[i]);
  amk::gpu::mbarrier_init_fence();
  const size_t region = src_bytes / gridDim.x / kCopyBytes * kCopyBytes;  // a bulk copy's source: 16-byte aligned
  size_t at = base + static_cast<size_t>(blockIdx.x) * region;
  for (int i = 0; i < 2; ++i, at += kCopyBytes)
    amk::gpu::bulk_copy_to_shared(ring + i * kCopyBytes, src + at % src_bytes, kCopyBytes, &bars[i]);
  for (uint32_t k = 0;; ++k) {
    const int i = static_cast<int>(k & 1);
    amk::gpu::mbarrier_wait_parity(&bars[i], (k >> 1) & 1);
    if (*done != 0) {
      amk::gpu::mbarrier_wait_parity(&bars[i ^ 1], ((k + 1) >> 1) & 1);  // the other copy in flight
      return;
    }
    amk::gpu::bulk_copy_to_shared(ring + i * kCopyBytes, src + at % src_bytes, kCopyBytes, &bars[i]);
    at += kCopyBytes;
  }
#else
  (void)t, (void)src, (void)src_bytes, (void)base, (void)done;
#endif  // AMK_HAVE_BULK_COPY
}

__global__ void __launch_bounds__(kStreamThreads, 1)
    reduce_probe(int mode, int n, float* acc, float4* partials, float* out, unsigned* start, unsigned long long* times,
                 const char* src, size_t src_bytes, size_t base) {
  __shared__ int done;
  const int b = static_cast<int>(blockIdx.x), t = static_cast<int>(threadIdx.x), blocks = static_cast<int>(gridDim.x);
  const bool streaming = blockDim.x > kThreads;
  if (t == 0) {  // every block resident (one per SM): start together
    done = 0;
    atomicAdd(start, 1u);
    while (*reinterpret_cast<volatile unsigned*>(start) < static_cast<unsigned>(blocks)) {
    }
  }
  __syncthreads();
  if (t >= kThreads) {
    stream_until_done(t, src, src_bytes, base, &done);
    return;
  }
  if (streaming) {  // 3 us for the stream to reach its steady state
    const unsigned long long until = timer_ns() + 3000;
    while (timer_ns() < until) {
    }
  }
  asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
  const unsigned long long t0 = timer_ns();
  const int n4 = n / 4;
  for (int v = t; v < n4; v += kThreads) {
    const float a = partial(b, 4 * v), c = partial(b, 4 * v + 1), d = partial(b, 4 * v + 2), e = partial(b, 4 * v + 3);
    if (mode == kRed) {
      atomicAdd(&acc[4 * v], a);
      atomicAdd(&acc[4 * v + 1], c);
      atomicAdd(&acc[4 * v + 2], d);
      atomicAdd(&acc[4 * v + 3], e);
    } else if (mode == kRed4) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(&acc[4 * v]), "f"(a), "f"(c),
                   "f"(d), "f"(e)
                   : "memory");
#endif
    } else if (mode == kStore) {
      partials[static_cast<size_t>(b) * n4 + v] = make_float4(a, c, d, e);
    } else {  // kSum: the rows the store mode's launches left, in block order
      float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int r = 0; r < blocks; ++r) {
        const float4 p = partials[static_cast<size_t>(r) * n4 + v];
        s.x += p.x, s.y += p.y, s.z += p.z, s.w += p.w;
      }
      if (b == 0) reinterpret_cast<float4*>(out)[v] = s;
    }
  }
  asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
  if (t == 0) {
    __threadfence();
    times[2 * b] = t0;
    times[2 * b + 1] = timer_ns();
    *reinterpret_cast<volatile int*>(&done) = 1;
  }
}

template <typename T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? T{} : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2048;
  if (n <= 0 || n % 4 != 0 || n > (1 << 20)) {
    std::fprintf(stderr, "usage: %s [N]: N, the vector's length, a positive multiple of 4 up to 2^20 (default 2048)\n",
                 PROBE_NAME);
    return 2;
  }
  int dev = 0;
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major < 9) {
    std::fprintf(stderr, "%s: needs sm_90 (red.global.add.v4.f32); %s is sm_%d%d\n", PROBE_NAME, prop.name, prop.major,
                 prop.minor);
    return 1;
  }
  const int blocks = prop.multiProcessorCount;
  float *acc = nullptr, *out = nullptr;
  float4* partials = nullptr;
  unsigned* start = nullptr;
  unsigned long long* times = nullptr;
  PROBE_CHECK(cudaMalloc(&acc, sizeof(float) * n));
  PROBE_CHECK(cudaMalloc(&out, sizeof(float) * n));
  PROBE_CHECK(cudaMalloc(&partials, sizeof(float) * n * blocks));
  PROBE_CHECK(cudaMalloc(&start, sizeof(unsigned)));
  PROBE_CHECK(cudaMalloc(&times, sizeof(unsigned long long) * 2 * blocks));
  const size_t src_bytes = size_t{1} << 31;  // 2 GiB, 40x the L2: the stream's bytes come from HBM
  char* src = nullptr;
  PROBE_CHECK(cudaMalloc(&src, src_bytes));
  PROBE_CHECK(cudaMemset(src, 1, src_bytes));
  const int ring_bytes = 2 * static_cast<int>(kCopyBytes);
  PROBE_CHECK(cudaFuncSetAttribute(reduce_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, ring_bytes));
  std::printf("%s on %s (%d SMs): %d blocks x %d threads each add a vector of %d F32; medians of %d launches\n",
              PROBE_NAME, prop.name, blocks, blocks, kThreads, n, kLaunches - 1);
  std::printf("%-6s %-26s %-26s %s\n", "", "idle: span / block us", "HBM streaming: span / block", "check");
  const char* names[] = {"red", "red4", "store", "sum"};
  int failed = 0;
  for (int mode : {kRed, kRed4, kStore, kSum}) {
    double span[2], own[2];
    bool ok = true;
    for (int streaming = 0; streaming < 2; ++streaming) {
      PROBE_CHECK(cudaMemset(acc, 0, sizeof(float) * n));
      std::vector<double> spans, owns;
      for (int l = 0; l < kLaunches; ++l) {
        PROBE_CHECK(cudaMemset(start, 0, sizeof(unsigned)));
        const size_t base = static_cast<size_t>(l) * (size_t{4} << 20);  // other bytes every launch
        reduce_probe<<<blocks, streaming ? kStreamThreads : kThreads, streaming ? ring_bytes : 0>>>(
            mode, n, acc, partials, out, start, times, src, src_bytes, base);
        PROBE_CHECK(cudaGetLastError());
        PROBE_CHECK(cudaDeviceSynchronize());
        std::vector<unsigned long long> h(2 * blocks);
        PROBE_CHECK(cudaMemcpy(h.data(), times, sizeof(unsigned long long) * h.size(), cudaMemcpyDeviceToHost));
        if (l == 0) continue;  // the first launch: cold code, TLB
        unsigned long long first = h[0], last = h[1];
        std::vector<double> mine;
        for (int b = 0; b < blocks; ++b) {
          first = std::min(first, h[2 * b]);
          last = std::max(last, h[2 * b + 1]);
          mine.push_back(static_cast<double>(h[2 * b + 1] - h[2 * b]));
        }
        spans.push_back(static_cast<double>(last - first) / 1e3);
        owns.push_back(median(mine) / 1e3);
      }
      span[streaming] = median(spans);
      own[streaming] = median(owns);
      if (mode == kRed || mode == kRed4 || mode == kSum) {
        std::vector<float> h(n);
        PROBE_CHECK(cudaMemcpy(h.data(), mode == kSum ? out : acc, sizeof(float) * n, cudaMemcpyDeviceToHost));
        const int times_added = mode == kSum ? 1 : kLaunches;
        for (int i = 0; i < n && ok; ++i) {
          double want = 0.0;
          for (int b = 0; b < blocks; ++b) want += (b + i) % 7 + 1;
          ok = h[i] == static_cast<float>(want * times_added);
        }
      }
    }
    failed |= ok ? 0 : 1;
    std::printf("%-6s %10.2f / %-13.2f %10.2f / %-13.2f %s\n", names[mode], span[0], own[0], span[1], own[1],
                mode == kStore ? "-" : ok ? "ok" : "WRONG");
  }
  PROBE_CHECK(cudaFree(src));
  PROBE_CHECK(cudaFree(acc));
  PROBE_CHECK(cudaFree(out));
  PROBE_CHECK(cudaFree(partials));
  PROBE_CHECK(cudaFree(start));
  PROBE_CHECK(cudaFree(times));
  return failed;
}
