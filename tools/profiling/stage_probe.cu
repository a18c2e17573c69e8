// tools/profiling/stage_probe.cu (amk-stage-probe): what the arithmetic of a streamed GEMV task's x
// staging costs, alone. At each such task's head the whole block turns K raw bf16 values of x (and
// of its aux vector) into the fp32 planar x the chunk loop reads, while the weight ring, already
// full, waits (docs/PERFORMANCE.md rows 147-148). Here every block (one per SM, the megakernel's
// compute threads) finds raw x and aux already in shared memory and converts them in place
// with the prologue's arithmetic:
//   precise  silu_mul (expf and an IEEE division: the CPU VM's function)
//   fast     silu_mul_fast (the GPU prologues' __expf / __fdividef)
//   plain    x * aux (a multiply: the load, unpack and store alone)
// and prints, per mode, the median over launches of block 0's cycles (clock64) in us at the
// device's clock. The fast mode's staged values are checked against the precise mode's (relative
// difference <= 1e-5, element by element). usage: amk-stage-probe [K (default 14336)] [launches]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define PROBE_NAME "amk-stage-probe"
#include "tools/profiling/probe_check.h"

#include "instructions/block_geometry.h"
#include "instructions/common/dtype.h"
#include "instructions/gemv_core.cuh"
#include "instructions/silu_mul.h"

namespace {

using amk::instructions::kBlockThreads;    // the megakernel's block
using amk::instructions::kComputeThreads;  // its compute warps' threads, which stage x

enum Mode : int { kPrecise = 0, kFast = 1, kPlain = 2 };

/// Block: raw x at bytes [2K, 4K) of shared memory and raw aux at [0, 2K) (the planar layout's hi
/// and lo planes), converted in place by the compute threads with the kernel's unpack16 and
/// store_x8, vector v by thread v mod kComputeThreads; cycles[block] = the conversion's clock64
/// span on thread 0 (after the compute threads' barrier).
template <int M>
__global__ void __launch_bounds__(kBlockThreads, 1) stage(const uint4* gx, const uint4* gaux, int K, long long* cycles,
                                                          float* out) {
  extern __shared__ float4 s_raw[];
  char* const base = reinterpret_cast<char*>(s_raw);
  const int vecs = K / 8;
  uint4* const hi = reinterpret_cast<uint4*>(base + 2 * K);
  uint4* const lo = reinterpret_cast<uint4*>(base);
  for (int v = threadIdx.x; v < vecs; v += kBlockThreads) {
    hi[v] = gx[v];
    lo[v] = gaux[v];
  }
  __syncthreads();
  if (threadIdx.x >= kComputeThreads) return;
  namespace ins = amk::instructions;
  float* const s_x = reinterpret_cast<float*>(base);
  const long long t0 = clock64();
  for (int v = threadIdx.x; v < vecs; v += kComputeThreads) {
    float g[8], u[8];
    ins::unpack16<AMK_DTYPE_BF16>(hi[v], g);
    ins::unpack16<AMK_DTYPE_BF16>(lo[v], u);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      g[j] = M == kPrecise ? ins::silu_mul(g[j], u[j]) : M == kFast ? ins::silu_mul_fast(g[j], u[j]) : g[j] * u[j];
    ins::store_x8(s_x, 8 * static_cast<int64_t>(v), K, /*planar=*/true, g);  // onto lo[v] and hi[v], just read
  }
  ins::compute_barrier();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  if (blockIdx.x == 0)  // block 0's staged x, element order, for the check
    for (int k = threadIdx.x; k < K; k += kComputeThreads) out[k] = s_x[ins::x_planar_at(k, K)];
}

}  // namespace

int main(int argc, char** argv) {
  const int K = argc > 1 ? std::atoi(argv[1]) : 14336;
  const int launches = argc > 2 ? std::atoi(argv[2]) : 21;
  if (K <= 0 || K % 8 != 0 || K > 28 * 1024 || launches <= 0) {
    std::fprintf(stderr, "amk-stage-probe: K must be a positive multiple of 8 up to 28672, launches > 0\n");
    return 2;
  }
  int dev = 0, sms = 0, clock_khz = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  // gate-like values over [-8, 8) and up-like over [-2, 2), seeded: silu's whole curve is met.
  std::vector<uint16_t> hx(K), ha(K);
  uint32_t seed = 12345u;
  auto next = [&seed] { return (seed = seed * 1664525u + 1013904223u) >> 8; };
  for (int i = 0; i < K; ++i) {
    hx[i] = amk::instructions::f32_to_bf16(static_cast<float>(next() % 65536) / 4096.0f - 8.0f);
    ha[i] = amk::instructions::f32_to_bf16(static_cast<float>(next() % 65536) / 16384.0f - 2.0f);
  }
  uint4 *gx = nullptr, *ga = nullptr;
  long long* cycles = nullptr;
  float* out = nullptr;
  PROBE_CHECK(cudaMalloc(&gx, K * 2));
  PROBE_CHECK(cudaMalloc(&ga, K * 2));
  PROBE_CHECK(cudaMalloc(&cycles, sms * sizeof(long long)));
  PROBE_CHECK(cudaMalloc(&out, K * sizeof(float)));
  PROBE_CHECK(cudaMemcpy(gx, hx.data(), K * 2, cudaMemcpyHostToDevice));
  PROBE_CHECK(cudaMemcpy(ga, ha.data(), K * 2, cudaMemcpyHostToDevice));
  std::printf("device: %s (%d SMs, %d MHz); K %d, %d blocks of %d threads (%d converting), median of %d launches\n",
              prop.name, sms, clock_khz / 1000, K, sms, kBlockThreads, kComputeThreads, launches);
  const char* names[] = {"precise (silu_mul)", "fast (silu_mul_fast)", "plain (x * aux)"};
  std::vector<float> staged[3];
  for (int m = 0; m < 3; ++m) {
    auto* fn = m == kPrecise ? stage<kPrecise> : m == kFast ? stage<kFast> : stage<kPlain>;
    PROBE_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, K * 4));
    std::vector<long long> block0;
    for (int l = 0; l < launches; ++l) {
      fn<<<sms, kBlockThreads, K * 4>>>(gx, ga, K, cycles, out);
      PROBE_CHECK(cudaGetLastError());
      long long c = 0;
      PROBE_CHECK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
      block0.push_back(c);
    }
    std::sort(block0.begin(), block0.end());
    const long long med = block0[block0.size() / 2];
    std::printf("  %-22s %7lld cycles = %6.2f us\n", names[m], med, med / (clock_khz / 1000.0));
    staged[m].resize(K);
    PROBE_CHECK(cudaMemcpy(staged[m].data(), out, K * sizeof(float), cudaMemcpyDeviceToHost));
  }
  double worst = 0.0;
  for (int i = 0; i < K; ++i) {
    const double p = staged[kPrecise][i], f = staged[kFast][i];
    worst = std::max(worst, std::fabs(f - p) / std::max(std::fabs(p), 1e-30));
  }
  std::printf("  fast vs precise: worst relative difference %.2e (limit 1e-5)\n", worst);
  return worst <= 1e-5 ? 0 : 1;
}
