// tools/profiling/walk_probe.cu (amk-walk-probe): the fused o_proj tile's attention walk
// (instructions/attention_row.cuh, attention_row_kv_head: one warp runs a KV head's query heads
// over the window, 16 keys a block, mma.sync tiles and an online softmax) timed alone on one SM.
// In the megakernel a block of 16 keys costs ~1.1-1.2 us whether K / V come from L2 or shared
// memory and on warm code too (docs/PERFORMANCE.md row 178), ~4x what its instruction count
// suggests. Here one block of the megakernel's shape (352 compute threads, no loader, nothing
// else on the GPU) calls the same function: q and the fresh rows in shared memory, K / V of a
// Llama-1B layer (8 KV heads x 64, bf16) in global memory, L2-resident after the first call.
// Each warp w < W walks KV head w over `keys` keys, R times back to back; lane 0 times each call
// with clock64. Printed per (W, keys): the first call's cycles (cold code and data), the later
// calls' median (warm), both per block of 16 keys and in ns at the SM's clock.
// If one warp alone takes ~2000 cycles a block, the step's dependency chain is the cost; if one
// warp is fast and eight are slow, the warps contend for a unit (tensor cores, MUFU, shared).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define PROBE_NAME "amk-walk-probe"
#include "tools/profiling/probe_check.h"

#include "instructions/attention_row.cuh"

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHd = 64, kSeq = 128;
constexpr int kThreads = 352;  // the megakernel's compute warps
constexpr int kReps = 8;

__global__ void __launch_bounds__(kThreads, 1)
    walk_probe(amk::instructions::AttentionRowPlan rp, int warps, int keys, long long* cycles) {
#ifdef AMK_ATTN_MMA_PATH
  __shared__ float s_q[kHeads * kHd];
  __shared__ float s_fresh[kKvHeads * 2 * kHd];
  __shared__ float s_x[kHeads * kHd];
  for (int i = static_cast<int>(threadIdx.x); i < kHeads * kHd; i += kThreads)
    s_q[i] = 0.01f * static_cast<float>((i * 7) % 13) - 0.06f;
  for (int i = static_cast<int>(threadIdx.x); i < kKvHeads * 2 * kHd; i += kThreads) s_fresh[i] = 0.0f;
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (warp >= warps) return;
  for (int rep = 0; rep < kReps; ++rep) {
    __syncwarp();
    const long long t0 = clock64();
    amk::instructions::attention_row_kv_head<AMK_DTYPE_BF16>(rp, warp % kKvHeads, 0, keys, keys, s_q, s_fresh, s_x,
                                                             true);
    __syncwarp();
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[warp * kReps + rep] = t1 - t0;
  }
#else
  // No tensor-core path on this architecture (the host refuses it below sm_80).
  (void)rp;
  (void)warps;
  (void)keys;
  (void)cycles;
#endif  // AMK_ATTN_MMA_PATH
}

uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "%s: unknown argument '%s' (usage: amk-walk-probe, no options)\n", PROBE_NAME, argv[1]);
    return 2;
  }
  int dev = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  int clock_khz = 0;
  PROBE_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  std::printf("device: %s (sm_%d%d), SM clock %.0f MHz (nominal)\n", prop.name, prop.major, prop.minor, clock_khz / 1e3);
  if (prop.major < 8) {
    std::fprintf(stderr, "amk-walk-probe: the walk needs sm_80+ (tensor cores)\n");
    return 1;
  }
  const size_t cache_elems = static_cast<size_t>(kSeq) * kKvHeads * kHd;
  std::vector<uint16_t> host(cache_elems);
  for (size_t i = 0; i < cache_elems; ++i) host[i] = bf16_bits(0.02f * static_cast<float>((i * 2654435761u) % 97) / 97.0f - 0.01f);
  void* k = nullptr;
  void* v = nullptr;
  long long* d_cycles = nullptr;
  PROBE_CHECK(cudaMalloc(&k, cache_elems * 2));
  PROBE_CHECK(cudaMalloc(&v, cache_elems * 2));
  PROBE_CHECK(cudaMalloc(&d_cycles, sizeof(long long) * 16 * kReps));
  PROBE_CHECK(cudaMemcpy(k, host.data(), cache_elems * 2, cudaMemcpyHostToDevice));
  PROBE_CHECK(cudaMemcpy(v, host.data(), cache_elems * 2, cudaMemcpyHostToDevice));
  amk::instructions::AttentionRowPlan rp;
  rp.k = k;
  rp.v = v;
  rp.dtype = AMK_DTYPE_BF16;
  rp.head_dim = kHd;
  rp.n_heads = kHeads;
  rp.n_kv_heads = kKvHeads;
  rp.group = kHeads / kKvHeads;
  rp.seq = kSeq;
  rp.scale = 0.125f;
  std::printf("%5s %5s | %12s %12s | %12s %12s\n", "warps", "keys", "cold cyc/blk", "warm cyc/blk", "cold ns/blk",
              "warm ns/blk");
  for (int warps : {1, 2, 8}) {
    for (int keys : {16, 128}) {
      std::vector<long long> c(static_cast<size_t>(warps) * kReps);
      walk_probe<<<1, kThreads>>>(rp, warps, keys, d_cycles);
      PROBE_CHECK(cudaGetLastError());
      PROBE_CHECK(cudaDeviceSynchronize());
      PROBE_CHECK(cudaMemcpy(c.data(), d_cycles, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      std::vector<double> cold, warm;
      for (int w = 0; w < warps; ++w) {
        cold.push_back(static_cast<double>(c[w * kReps]));
        for (int r = 1; r < kReps; ++r) warm.push_back(static_cast<double>(c[w * kReps + r]));
      }
      const double blocks = keys / 16.0, ns_per_cycle = 1e6 / clock_khz;
      std::printf("%5d %5d | %12.0f %12.0f | %12.0f %12.0f\n", warps, keys, median(cold) / blocks,
                  median(warm) / blocks, median(cold) / blocks * ns_per_cycle, median(warm) / blocks * ns_per_cycle);
    }
  }
  PROBE_CHECK(cudaFree(k));
  PROBE_CHECK(cudaFree(v));
  PROBE_CHECK(cudaFree(d_cycles));
  return 0;
}
