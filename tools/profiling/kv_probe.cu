// tools/profiling/kv_probe.cu (amk-kv-probe): how fast can the SMs read a Llama-1B KV cache at ctx
// 8192 (K and V [8192][8 KV heads][64] bf16, 16.8 MB) in the access patterns split-KV attention
// tasks use, with nothing else running? The megakernel's attention stage at ctx 8192 takes ~23 us
// per layer (H200), 4 us of HBM time, and reading each KV head's rows once per task instead of
// once per query head made it slower (docs/PERFORMANCE.md, row 99). Patterns, each one launch
// of 352-thread blocks whose lanes keep 4 16-byte loads of K and 4 of V in flight
// (attention_head_vec's loop, without the arithmetic):
//
//   head     the gpu-decode preset's tasks: 128 blocks = 32 query heads x 4 partitions of 2048
//            keys; a block reads its KV head's 128-byte slice of each row, so 4 blocks read the
//            same slices (GQA group 4) and each row's 8 slices go to 32 blocks
//   pair     16 head pairs x 8 partitions of 1024 keys: each slice read by 2 blocks
//   kvhead   8 KV heads x 8 partitions: each slice read once, 64 blocks
//   kvhead16 8 KV heads x 16 partitions of 512 keys: each slice read once, 128 blocks
//   rows     128 blocks of 64 consecutive keys, whole 1 KiB rows (every KV head): contiguous
//
// Each pattern with four kinds of 16-byte load (ld.global, .cg, .nc, L1::no_allocate) and, for
// head / kvhead16, with 100 or 180 KiB of shared memory reserved per block (the megakernel's L1
// carve-out). L2 is flushed before every timed launch. Printed: the median launch time over the
// repetitions, the rate of unique bytes (16.8 MB / time) and of requested bytes (what the blocks
// loaded).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define PROBE_NAME "amk-kv-probe"
#include "tools/profiling/probe_check.h"

namespace {

constexpr int kThreads = 352;  // the megakernel's compute threads (11 warps)
constexpr int kSeq = 8192, kKvHeads = 8, kHeadDim = 64, kRowBytes = kKvHeads * kHeadDim * 2;
constexpr int kU = 4;  // loads of K and of V in flight per lane

/// What block b reads: keys [k0, k0 + n) of the byte range [col, col + width) of each row.
struct Span {
  int k0, n, col, width;
};

enum class Pattern { Head, Pair, KvHead, KvHead16, Rows };

__device__ Span span_of(Pattern p, int b) {
  switch (p) {
    case Pattern::Head: return Span{(b / 32) * 2048, 2048, ((b % 32) / 4) * 128, 128};
    case Pattern::Pair: return Span{(b / 16) * 1024, 1024, ((b % 16) / 2) * 128, 128};
    case Pattern::KvHead: return Span{(b / 8) * 1024, 1024, (b % 8) * 128, 128};
    case Pattern::KvHead16: return Span{(b / 8) * 512, 512, (b % 8) * 128, 128};
    default: return Span{b * 64, 64, 0, kRowBytes};
  }
}

/// How a lane loads its 16 bytes: ld.global (L1-allocating, the megakernel's attention), .cg (L2
/// only), .nc (the read-only path) or L1::no_allocate.
enum class Load { Plain, Cg, Nc, NoAlloc };

template <Load L>
__device__ uint4 load16(const char* p) {
  uint4 r;
  if constexpr (L == Load::Plain) {
    r = *reinterpret_cast<const uint4*>(p);
  } else if constexpr (L == Load::Cg) {
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (L == Load::Nc) {
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else {
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  }
  return r;
}

/// Each lane covers 16 bytes of a row's span; a warp load covers 512 / width rows.
template <Load L>
__global__ void __launch_bounds__(kThreads) read_kv(Pattern p, const char* k, const char* v, float* sink) {
  const Span s = span_of(p, static_cast<int>(blockIdx.x));
  const int lanes_per_row = s.width / 16, rows_per_load = kThreads / lanes_per_row;
  const int t = static_cast<int>(threadIdx.x), sub = t % lanes_per_row, slot = t / lanes_per_row;
  if (slot >= rows_per_load) return;  // whole rows per load (rows: 5 x 64 lanes of 352)
  float acc = 0.0f;
  for (int r0 = slot; r0 < s.n; r0 += rows_per_load * kU) {
    uint4 kk[kU], vv[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int r = r0 + u * rows_per_load;
      const size_t at = static_cast<size_t>(s.k0 + (r < s.n ? r : 0)) * kRowBytes + s.col + sub * 16;
      kk[u] = load16<L>(k + at);
      vv[u] = load16<L>(v + at);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) acc += __uint_as_float(kk[u].x ^ vv[u].w);
  }
  if (acc == 1.2345f) sink[blockIdx.x] = acc;  // keeps the loads; never true for these bytes
}

__global__ void empty_kernel() {}

__global__ void flush(float* buf, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * static_cast<size_t>(blockDim.x))
    buf[i] += 1.0f;
}

}  // namespace

int main() {
  const size_t cache = static_cast<size_t>(kSeq) * kRowBytes;
  char *k = nullptr, *v = nullptr;
  float *sink = nullptr, *scratch = nullptr;
  const size_t scratch_n = 64u << 20;  // 256 MB of floats: more than L2
  PROBE_CHECK(cudaMalloc(&k, cache));
  PROBE_CHECK(cudaMalloc(&v, cache));
  PROBE_CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  PROBE_CHECK(cudaMalloc(&scratch, scratch_n * sizeof(float)));
  PROBE_CHECK(cudaMemset(k, 0x11, cache));
  PROBE_CHECK(cudaMemset(v, 0x22, cache));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s: K / V [%d][%d][%d] bf16, %.1f MB\n", prop.name, kSeq, kKvHeads, kHeadDim, 2.0 * cache / 1e6);
  struct Row {
    const char* name;
    Pattern p;
    int blocks;
    double requested;  // bytes the blocks load
  };
  const Row rows[] = {{"head", Pattern::Head, 128, 4.0 * 2 * cache}, {"pair", Pattern::Pair, 128, 2.0 * 2 * cache},
                      {"kvhead", Pattern::KvHead, 64, 2.0 * cache},   {"kvhead16", Pattern::KvHead16, 128, 2.0 * cache},
                      {"rows", Pattern::Rows, 128, 2.0 * cache}};
  cudaEvent_t a, b;
  PROBE_CHECK(cudaEventCreate(&a));
  PROBE_CHECK(cudaEventCreate(&b));
  using Kernel = void (*)(Pattern, const char*, const char*, float*);
  const struct {
    const char* name;
    Kernel fn;
  } kinds[] = {{"ld", read_kv<Load::Plain>}, {"ld.cg", read_kv<Load::Cg>}, {"ld.nc", read_kv<Load::Nc>},
               {"no_alloc", read_kv<Load::NoAlloc>}};
  // Median launch time of `launch` over 14 repetitions, L2 flushed before each.
  const auto time_us = [&](auto&& launch) {
    std::vector<float> us;
    for (int rep = 0; rep < 15; ++rep) {
      flush<<<prop.multiProcessorCount * 4, 512>>>(scratch, scratch_n);
      PROBE_CHECK(cudaEventRecord(a));
      launch();
      PROBE_CHECK(cudaEventRecord(b));
      PROBE_CHECK(cudaEventSynchronize(b));
      float ms = 0.0f;
      PROBE_CHECK(cudaEventElapsedTime(&ms, a, b));
      if (rep > 0) us.push_back(1000.0f * ms);
    }
    std::sort(us.begin(), us.end());
    return static_cast<double>(us[us.size() / 2]);
  };
  std::printf("empty launch %.2f us (in every time below)\n", time_us([] { empty_kernel<<<128, kThreads>>>(); }));
  // The megakernel holds ~180 KB of shared memory per SM (weight ring, work area), which leaves L1
  // a small carve-out: the same reads with that much shared memory reserved (and unused).
  std::printf("%-9s %-9s %9s %6s %10s %14s %16s\n", "pattern", "load", "smem KiB", "blocks", "median us", "unique GB/s",
              "requested GB/s");
  for (const int smem_kib : {0, 100, 180}) {
    for (const auto& kind : kinds) {
      PROBE_CHECK(cudaFuncSetAttribute(kind.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kib * 1024));
      for (const Row& r : rows) {
        if (smem_kib > 0 && r.p != Pattern::Head && r.p != Pattern::KvHead16) continue;
        const double t = time_us([&] { kind.fn<<<r.blocks, kThreads, smem_kib * 1024>>>(r.p, k, v, sink); });
        std::printf("%-9s %-9s %9d %6d %10.2f %14.0f %16.0f\n", r.name, kind.name, smem_kib, r.blocks, t,
                    2.0 * cache / (t * 1e3), r.requested / (t * 1e3));
      }
    }
  }
  return 0;
}
