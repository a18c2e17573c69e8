// tools/profiling/walk_probe.cu (amk-walk-probe): the fused o_proj tile's attention walk
// (instructions/attention_row.cuh, attention_row_kv_head: one warp runs a KV head's query heads
// over the window, 16 keys a block, mma.sync tiles and an online softmax) timed alone on one SM.
// In the megakernel a block of 16 keys costs ~1.1-1.2 us whether K / V come from L2 or shared
// memory and on warm code too (docs/PERFORMANCE.md row 178), ~4x what its instruction count
// suggests. Here one block of the megakernel's shape (384 threads, the walk on up to 8 of its
// warps, no loader, nothing else on the GPU) calls the same function: q and the fresh rows in
// shared memory, K / V of a Llama-1B layer (8 KV heads x 64, bf16) in global memory, L2-resident
// after the first call.
// Each warp w < W walks KV head w over `keys` keys, R times back to back; lane 0 times each call
// with clock64. Printed per (W, keys): the first call's cycles (cold code and data), the later
// calls' median (warm), both per block of 16 keys and in ns at the SM's clock.
// If one warp alone takes ~2000 cycles a block, the step's dependency chain is the cost; if one
// warp is fast and eight are slow, the warps contend for a unit (tensor cores, MUFU, shared).
// Also printed: a checksum of the 8-warp, 128-key walk's output (variants of the step must agree
// to rounding) and the latencies of the step's links (one warp, 64 dependent instructions of a
// kind), which say what the block's dependency chain should cost.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define PROBE_NAME "amk-walk-probe"
#include "tools/profiling/probe_check.h"

#include "instructions/attention_row.cuh"
#include "instructions/common/dtype.h"

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHd = 64, kSeq = 128;
// The megakernel's block (11 compute warps and the loader warp): its launch bounds give ptxas
// the same 168-register budget, so the walk spills here where it spills there.
constexpr int kThreads = 384;
constexpr int kReps = 8;
constexpr int kChain = 64;

// Latencies of the block step's links, one warp, kChain dependent instructions each, in cycles a
// link: [0] mma m16n8k16 (the accumulator feeds the next), [1] shfl_xor, [2] ex2.approx,
// [3] fmul, [4] a 16-byte load from global memory (L1-resident: the address comes from the last
// load), [5] the same from shared memory, [6] mma issue: 8 independent accumulators, cycles per mma.
__global__ void __launch_bounds__(32, 1) latency_probe(const uint4* g, long long* cycles, float* sink) {
#ifdef AMK_ATTN_MMA_PATH
  __shared__ uint4 s_chain[64];
  const int lane = static_cast<int>(threadIdx.x);
  s_chain[lane] = make_uint4(0u, 0u, 0u, 0u);
  s_chain[lane + 32] = make_uint4(0u, 0u, 0u, 0u);
  __syncwarp();
  float d[2] = {1.0f, 0.0f}, x = static_cast<float>(lane) * 1e-3f;
  const uint32_t a = 0x3f803f80u, b = 0x00003f80u;
  long long t[8];
  t[0] = clock64();
#pragma unroll
  for (int i = 0; i < kChain; ++i) amk::instructions::mma_rows8<AMK_DTYPE_BF16>(d, a, a, b, b);
  t[1] = clock64();
#pragma unroll
  for (int i = 0; i < kChain; ++i) x = __shfl_xor_sync(0xffffffffu, x, 1);
  t[2] = clock64();
#pragma unroll
  // exp2_ftz's own asm, volatile: a plain asm may move across the clock64 reads.
  for (int i = 0; i < kChain; ++i) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x));
  t[3] = clock64();
#pragma unroll
  for (int i = 0; i < kChain; ++i) asm volatile("mul.f32 %0, %0, 0f3F800001;" : "+f"(x));
  t[4] = clock64();
  uint32_t idx = 0;
#pragma unroll
  for (int i = 0; i < kChain; ++i) idx = __ldg(g + idx + lane).x;
  t[5] = clock64();
#pragma unroll
  for (int i = 0; i < kChain; ++i) idx = s_chain[idx + lane].x;
  t[6] = clock64();
  float e[8][2] = {};
#pragma unroll
  for (int i = 0; i < kChain; ++i) amk::instructions::mma_rows8<AMK_DTYPE_BF16>(e[i % 8], a, a, b, b);
  t[7] = clock64();
  if (lane == 0)
    for (int k = 0; k < 7; ++k) cycles[k] = t[k + 1] - t[k];
  float es = 0.0f;
  for (int i = 0; i < 8; ++i) es += e[i][0] + e[i][1];
  sink[lane] = x + d[0] + d[1] + static_cast<float>(idx) + es;
#else
  (void)g;
  (void)cycles;
  (void)sink;
#endif  // AMK_ATTN_MMA_PATH
}

__global__ void __launch_bounds__(kThreads, 1)
    walk_probe(amk::instructions::AttentionRowPlan rp, int warps, int j_begin, int keys, bool planar,
               long long* cycles, float* out) {
#ifdef AMK_ATTN_MMA_PATH
  // As the megakernel calls it: the plan in shared memory, the window's start and the x layout
  // from run time (as constants the compiler specialised the walk, and it fit in fewer registers).
  __shared__ amk::instructions::AttentionRowPlan s_rp;
  __shared__ float s_q[kHeads * kHd];
  __shared__ float s_fresh[kKvHeads * 2 * kHd];
  __shared__ float s_x[kHeads * kHd];
  for (int i = static_cast<int>(threadIdx.x); i < kHeads * kHd; i += kThreads)
    s_q[i] = 0.01f * static_cast<float>((i * 7) % 13) - 0.06f;
  for (int i = static_cast<int>(threadIdx.x); i < kKvHeads * 2 * kHd; i += kThreads) s_fresh[i] = 0.0f;
  if (threadIdx.x == 0) s_rp = rp;
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (warp >= warps) return;
  for (int rep = 0; rep < kReps; ++rep) {
    __syncwarp();
    const long long t0 = clock64();
    amk::instructions::attention_row_kv_head<AMK_DTYPE_BF16>(s_rp, warp % kKvHeads, j_begin, keys, keys, s_q, s_fresh,
                                                             s_x, planar);
    __syncwarp();
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[warp * kReps + rep] = t1 - t0;
  }
  __syncwarp();
  // The output (s_x, the group's heads of KV head `warp`, planar) for the checksum.
  for (int i = static_cast<int>(threadIdx.x & 31); i < (kHeads / kKvHeads) * kHd; i += 32) {
    const int k = warp * (kHeads / kKvHeads) * kHd + i;
    out[k] = s_x[amk::instructions::x_planar_at(k, kHeads * kHd)];
  }
#else
  // No tensor-core path on this architecture (the host refuses it below sm_80).
  (void)rp;
  (void)warps;
  (void)j_begin;
  (void)keys;
  (void)planar;
  (void)cycles;
  (void)out;
#endif  // AMK_ATTN_MMA_PATH
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
  for (size_t i = 0; i < cache_elems; ++i)
    host[i] = amk::instructions::f32_to_bf16(0.02f * static_cast<float>((i * 2654435761u) % 97) / 97.0f - 0.01f);
  void* k = nullptr;
  void* v = nullptr;
  long long* d_cycles = nullptr;
  float* d_out = nullptr;
  PROBE_CHECK(cudaMalloc(&d_out, sizeof(float) * kHeads * kHd));
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
      PROBE_CHECK(cudaMemset(d_out, 0, sizeof(float) * kHeads * kHd));
      walk_probe<<<1, kThreads>>>(rp, warps, 0, keys, true, d_cycles, d_out);
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
  {  // the last run (8 warps, 128 keys) wrote every head's output
    std::vector<float> o(static_cast<size_t>(kHeads) * kHd);
    PROBE_CHECK(cudaMemcpy(o.data(), d_out, o.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0, abs_sum = 0.0;
    for (size_t i = 0; i < o.size(); ++i) {
      sum += o[i] * static_cast<double>((i % 7) + 1);
      abs_sum += o[i] < 0 ? -o[i] : o[i];
    }
    std::printf("checksum (8 warps, 128 keys): weighted %.9e, |sum| %.9e\n", sum, abs_sum);
  }
  {
    long long lat[7] = {};
    float* sink = nullptr;
    uint4* zeros = nullptr;  // the load chains' indices: each load's value is the next offset
    PROBE_CHECK(cudaMalloc(&sink, sizeof(float) * 32));
    PROBE_CHECK(cudaMalloc(&zeros, sizeof(uint4) * 64));
    PROBE_CHECK(cudaMemset(zeros, 0, sizeof(uint4) * 64));
    for (int run = 0; run < 2; ++run) {  // the second run on warm code and an L1-resident chain
      latency_probe<<<1, 32>>>(zeros, d_cycles, sink);
      PROBE_CHECK(cudaGetLastError());
      PROBE_CHECK(cudaDeviceSynchronize());
    }
    PROBE_CHECK(cudaMemcpy(lat, d_cycles, sizeof(lat), cudaMemcpyDeviceToHost));
    std::printf("latency, cycles a link: mma %.1f, shfl %.1f, ex2 %.1f, fmul %.1f, global load %.1f, shared load %.1f;"
                " independent mma: %.1f cycles each\n",
                lat[0] / double(kChain), lat[1] / double(kChain), lat[2] / double(kChain), lat[3] / double(kChain),
                lat[4] / double(kChain), lat[5] / double(kChain), lat[6] / double(kChain));
    PROBE_CHECK(cudaFree(sink));
    PROBE_CHECK(cudaFree(zeros));
  }
  PROBE_CHECK(cudaFree(k));
  PROBE_CHECK(cudaFree(v));
  PROBE_CHECK(cudaFree(d_cycles));
  PROBE_CHECK(cudaFree(d_out));
  return 0;
}
