// tools/profiling/handoff_probe.cu (amk-handoff-probe): what does one stage-to-stage hand-off cost,
// the megakernel's way (data, then a counter release; one thread polls the counter, acquires, and
// the block reads the data) against NCCL's LL way (each 32-bit value stored beside the round's tag
// in one 64-bit word; every consumer thread spins on its own words, no fence, no counter)?
//
// Why: a Llama layer has five hops of ~1.5-2.1 us (docs/PERFORMANCE.md rows 132, 150) and row 93
// measured that dropping the release fence alone gains only 0.3-0.6 us a hop, because the counter's
// trip to L2, the poll's round trip and then the data's round trip remain. An LL hand-off folds
// the counter and the data into one trip, but every consumer SM then spins on the producers' lines,
// so its cost under load is the question. This probe runs the hand-off between whole stages, as
// the megakernel has them: P producer blocks each write a slice of an E-element vector, then all
// blocks (one per SM) read the whole vector; round r + 1's producers start once they have read
// round r, so a round is one hop plus its writes and reads. Every round has its own buffer (no
// reuse, no stale tags). Each block's compute warps (11, as the megakernel's) do the work; its
// 12th warp is the loader, which with `stream` keeps two 64 KiB bulk copies from HBM in flight the
// whole time (the weight ring's traffic, under which an L2 round trip is ~0.6 us instead of ~0.14:
// PERFORMANCE row 152).
//   counter  producers: stores, block barrier, thread 0's red.release.gpu (the megakernel's task
//            end); consumers: thread 0 polls the counter (ld.relaxed.gpu), fence.acquire.gpu, block
//            barrier, every thread loads its values (ld.global.cg) and checks them.
//   ll       producers: one st.relaxed.gpu.u64 per value ((tag << 32) | value); consumers: every
//            thread loads its words with ld.relaxed.gpu.u64 until each carries the round's tag.
//   relaxed  counter's protocol with red.relaxed.gpu and no acquire fence: a deliberate race, for
//            timing only (failures may be non-zero): what the two fences cost.
//   nowait   producers store, consumers read at once without any synchronisation (wrong values
//            allowed): the writes and reads alone, the floor under both.
// For counter and relaxed, block 0 (a producer) and the last block (a consumer only, when there
// are fewer producers than SMs) stamp each round's phases with %globaltimer: the release, the
// counter's trip until the poll sees it, the acquire, and the reads.
// Printed per configuration: the median round (the latest block's finish of round r minus of round
// r - 1), and the check's failures (must be 0 for counter and ll). sm_90 for the stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#define PROBE_NAME "amk-handoff-probe"
#include "tools/profiling/probe_check.h"

#include "targets/cuda/bulk_copy.cuh"
#include "targets/gpu.h"

namespace {

constexpr int kComputeWarps = 11;  // the megakernel's (instructions/block_geometry.h)
constexpr int kComputeThreads = kComputeWarps * 32;
constexpr int kThreads = kComputeThreads + 32;  // + the loader warp
constexpr int kSlotBytes = 64 << 10;            // the weight ring: 2 x 64 KiB
constexpr int kSlots = 2;
constexpr int kBarrierId = 1;  // the compute warps' named barrier (0 is __syncthreads)

enum Mode { kCounter = 0, kLL = 1, kNoWait = 2, kRelaxed = 3 };
constexpr int kStamps = 6;  // per round: producer before / after its release, consumer poll seen, acquired, read, spare

struct Args {
  int mode, elems, producers, rounds, stream;
  uint32_t* data32;       // [rounds][elems] (counter, nowait)
  uint64_t* data64;       // [rounds][elems] (ll)
  uint32_t* counter;      // one word in its own line
  const char* hbm;        // the stream's source: blocks x region bytes, far beyond L2
  long long region;       // bytes of each block's part of it
  unsigned long long* t;  // [rounds][blocks]: when each block had read round r (ns)
  unsigned* failures;     // values that were not the round's (counter / ll)
  unsigned long long* stamps;  // [rounds][kStamps] (counter / relaxed)
  float* sink;                 // keeps nowait's loads alive
};

__device__ uint32_t value_of(int r, int i) { return static_cast<uint32_t>(r) * 2654435761u ^ static_cast<uint32_t>(i); }

__device__ void compute_barrier() { asm volatile("bar.sync %0, %1;" ::"r"(kBarrierId), "r"(kComputeThreads) : "memory"); }

__device__ void store_relaxed_u64(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/// Two tagged words in one 16-byte load; each 64-bit element is single-copy atomic on its own.
__device__ void load_relaxed_u64x2(const uint64_t* p, uint64_t* w) {
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(w[0]), "=l"(w[1]) : "l"(p) : "memory");
}

/// The loader warp's lane 0: two 64 KiB bulk copies from this block's HBM region in flight until
/// the compute warps set `stop` (then the copies in flight are waited for).
__device__ void stream_until(const Args& a, char* ring, uint64_t* bars, const volatile int* stop) {
#if AMK_HAVE_BULK_COPY
  const char* src = a.hbm + blockIdx.x * a.region;
  long long off = 0, n = 0;
  for (; *stop == 0; ++n) {
    const int s = static_cast<int>(n % kSlots);
    if (n >= kSlots) amk::gpu::mbarrier_wait_parity(&bars[s], static_cast<uint32_t>((n / kSlots - 1) & 1));
    amk::gpu::bulk_copy_to_shared(ring + s * kSlotBytes, src + off, kSlotBytes, &bars[s]);
    off = off + kSlotBytes >= a.region ? 0 : off + kSlotBytes;
  }
  for (long long k = n > kSlots ? n - kSlots : 0; k < n; ++k)
    amk::gpu::mbarrier_wait_parity(&bars[k % kSlots], static_cast<uint32_t>((k / kSlots) & 1));
#else
  (void)a;
  (void)ring;
  (void)bars;
  (void)stop;
#endif  // AMK_HAVE_BULK_COPY
}

__global__ void __launch_bounds__(kThreads, 1) handoff_probe(Args a) {
  extern __shared__ __align__(128) char ring[];
  __shared__ uint64_t bars[kSlots];
  __shared__ volatile int stop;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    stop = 0;
#if AMK_HAVE_BULK_COPY
    for (int i = 0; i < kSlots; ++i) amk::gpu::mbarrier_init(&bars[i]);
    amk::gpu::mbarrier_init_fence();
#endif  // AMK_HAVE_BULK_COPY
  }
  __syncthreads();
  if (t >= kComputeThreads) {
    if (a.stream && amk::gpu::lane_id() == 0) stream_until(a, ring, bars, &stop);
    return;
  }
  const int b = static_cast<int>(blockIdx.x);
  const int slice = (a.elems + a.producers - 1) / a.producers;
  unsigned bad = 0;
  for (int r = 1; r <= a.rounds; ++r) {
    const long long row = static_cast<long long>(r - 1) * a.elems;
    if (b < a.producers) {  // this block's slice of round r
      const int lo = b * slice, hi = min(a.elems, lo + slice);
      for (int i = lo + t; i < hi; i += kComputeThreads) {
        if (a.mode == kLL) store_relaxed_u64(a.data64 + row + i, (static_cast<uint64_t>(r) << 32) | value_of(r, i));
        else a.data32[row + i] = value_of(r, i);
      }
      if (a.mode == kCounter || a.mode == kRelaxed) {
        compute_barrier();
        if (t == 0) {
          unsigned long long* st = a.stamps + static_cast<long long>(r - 1) * kStamps;
          if (b == 0) st[0] = amk::gpu::global_timer_ns();
          if (a.mode == kCounter) amk::gpu::atomic_add_release_gpu(a.counter, 1u);
          else asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(a.counter) : "memory");
          if (b == 0) st[1] = amk::gpu::global_timer_ns();
        }
      }
    }
    const bool stamping = t == 0 && b == static_cast<int>(gridDim.x) - 1;
    unsigned long long* const st = a.stamps + static_cast<long long>(r - 1) * kStamps;
    if (a.mode == kCounter || a.mode == kRelaxed) {
      if (t == 0) {
        const uint32_t want = static_cast<uint32_t>(r) * static_cast<uint32_t>(a.producers);
        while (amk::gpu::load_relaxed_gpu(a.counter) < want) {
        }
        if (stamping) st[2] = amk::gpu::global_timer_ns();
        if (a.mode == kCounter) amk::gpu::fence_acquire_gpu();
        if (stamping) st[3] = amk::gpu::global_timer_ns();
      }
      compute_barrier();
    }
    float keep = 0.0f;
    // 16-byte loads, as the megakernel's x staging: 4 values (counter / nowait) or 2 tagged words
    // (ll) a load.
    if (a.mode == kLL) {
      for (int i = 2 * t; i < a.elems; i += 2 * kComputeThreads) {
        uint64_t w[2];
        load_relaxed_u64x2(a.data64 + row + i, w);
        while (static_cast<int>(w[0] >> 32) != r || static_cast<int>(w[1] >> 32) != r) load_relaxed_u64x2(a.data64 + row + i, w);
        bad += (static_cast<uint32_t>(w[0]) != value_of(r, i)) + (static_cast<uint32_t>(w[1]) != value_of(r, i + 1));
      }
    } else {
      for (int i = 4 * t; i < a.elems; i += 4 * kComputeThreads) {
        const uint4 v = __ldcg(reinterpret_cast<const uint4*>(a.data32 + row + i));
        if (a.mode != kNoWait)
          bad += (v.x != value_of(r, i)) + (v.y != value_of(r, i + 1)) + (v.z != value_of(r, i + 2)) + (v.w != value_of(r, i + 3));
        keep += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
      }
    }
    if (keep == 1.2345f) a.sink[b] = keep;  // the loads are used: never removed
    compute_barrier();  // the block has round r
    if (t == 0) a.t[static_cast<long long>(r - 1) * gridDim.x + b] = amk::gpu::global_timer_ns();
    if (stamping) st[4] = amk::gpu::global_timer_ns();
  }
  if (bad != 0) atomicAdd(a.failures, bad);
  if (t == 0) stop = 1;
}

struct Config {
  int mode, elems, producers, stream;
};

struct Result {
  double round_us;
  unsigned failures;
  double release_us, trip_us, acquire_us, read_us;  // medians of the stamped phases (counter / relaxed)
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Result run(const Config& c, int blocks, int rounds, char* hbm, long long region) {
  Args a{};
  a.mode = c.mode;
  a.elems = c.elems;
  a.producers = c.producers;
  a.rounds = rounds;
  a.stream = c.stream;
  a.hbm = hbm;
  a.region = region;
  const size_t n = static_cast<size_t>(rounds) * c.elems;
  PROBE_CHECK(cudaMalloc(&a.data32, n * sizeof(uint32_t)));
  PROBE_CHECK(cudaMalloc(&a.data64, n * sizeof(uint64_t)));
  PROBE_CHECK(cudaMalloc(&a.counter, 128));
  PROBE_CHECK(cudaMalloc(&a.t, static_cast<size_t>(rounds) * blocks * sizeof(unsigned long long)));
  PROBE_CHECK(cudaMalloc(&a.failures, sizeof(unsigned)));
  PROBE_CHECK(cudaMalloc(&a.stamps, static_cast<size_t>(rounds) * kStamps * sizeof(unsigned long long)));
  PROBE_CHECK(cudaMalloc(&a.sink, static_cast<size_t>(blocks) * sizeof(float)));
  std::vector<unsigned long long> stamps(static_cast<size_t>(rounds) * kStamps);
  std::vector<double> rel, trip, acq, rd;
  const size_t smem = static_cast<size_t>(kSlots) * kSlotBytes;
  PROBE_CHECK(cudaFuncSetAttribute(handoff_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  std::vector<double> medians;
  unsigned failures = 0;
  std::vector<unsigned long long> t(static_cast<size_t>(rounds) * blocks);
  for (int rep = 0; rep < 3; ++rep) {
    PROBE_CHECK(cudaMemset(a.data32, 0, n * sizeof(uint32_t)));
    PROBE_CHECK(cudaMemset(a.data64, 0, n * sizeof(uint64_t)));
    PROBE_CHECK(cudaMemset(a.counter, 0, 128));
    PROBE_CHECK(cudaMemset(a.failures, 0, sizeof(unsigned)));
    // Cooperative: every block is resident, so the spinning consumers cannot starve a producer.
    void* params[] = {&a};
    PROBE_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(handoff_probe), dim3(blocks), dim3(kThreads), params,
                                            smem, nullptr));
    PROBE_CHECK(cudaDeviceSynchronize());
    PROBE_CHECK(cudaMemcpy(t.data(), a.t, t.size() * sizeof(t[0]), cudaMemcpyDeviceToHost));
    unsigned f = 0;
    PROBE_CHECK(cudaMemcpy(&f, a.failures, sizeof(f), cudaMemcpyDeviceToHost));
    failures += f;
    PROBE_CHECK(cudaMemcpy(stamps.data(), a.stamps, stamps.size() * sizeof(stamps[0]), cudaMemcpyDeviceToHost));
    if (c.mode == kCounter || c.mode == kRelaxed)
      for (int r = 8; r < rounds; ++r) {
        const unsigned long long* st = stamps.data() + static_cast<size_t>(r) * kStamps;
        rel.push_back(static_cast<double>(st[1] - st[0]));
        trip.push_back(static_cast<double>(st[2]) - static_cast<double>(st[1]));
        acq.push_back(static_cast<double>(st[3] - st[2]));
        rd.push_back(static_cast<double>(st[4] - st[3]));
      }
    std::vector<double> periods;
    unsigned long long prev = 0;
    for (int r = 0; r < rounds; ++r) {
      unsigned long long last = 0;
      for (int b = 0; b < blocks; ++b) last = std::max(last, t[static_cast<size_t>(r) * blocks + b]);
      if (r >= 8) periods.push_back(static_cast<double>(last - prev));  // the first rounds warm up
      prev = last;
    }
    std::sort(periods.begin(), periods.end());
    medians.push_back(periods[periods.size() / 2]);
  }
  PROBE_CHECK(cudaFree(a.data32));
  PROBE_CHECK(cudaFree(a.data64));
  PROBE_CHECK(cudaFree(a.counter));
  PROBE_CHECK(cudaFree(a.t));
  PROBE_CHECK(cudaFree(a.failures));
  PROBE_CHECK(cudaFree(a.stamps));
  PROBE_CHECK(cudaFree(a.sink));
  std::sort(medians.begin(), medians.end());
  return Result{medians[1] * 1e-3,         failures,
                median_of(rel) * 1e-3,     median_of(trip) * 1e-3,
                median_of(acq) * 1e-3,     median_of(rd) * 1e-3};
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--rounds" && i + 1 < argc) rounds = std::max(16, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: amk-handoff-probe [--rounds N]\n");
      return 2;
    }
  }
  int dev = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount, major = prop.major, coop = prop.cooperativeLaunch;
  std::printf("device: %s (sm_%d%d, %d SMs), %d rounds\n", prop.name, major, prop.minor, sms, rounds);
  if (!coop) {
    std::fprintf(stderr, "amk-handoff-probe: the device has no cooperative launch\n");
    return 1;
  }
  const long long region = 8ll << 20;  // per block: 132 x 8 MiB, far beyond L2
  char* hbm = nullptr;
  PROBE_CHECK(cudaMalloc(&hbm, static_cast<size_t>(sms) * region));
  PROBE_CHECK(cudaMemset(hbm, 0x3c, static_cast<size_t>(sms) * region));
  // The megakernel's hand-offs: attention (32 tasks) -> o_proj and o_proj / q-k-v (~128 tasks) ->
  // the next stage over a 2048-wide vector (the 1B); gate / up -> down over 8192 values.
  const int shapes[][2] = {{2048, 32}, {2048, 128}, {8192, 128}};
  const char* names[] = {"counter", "ll", "nowait", "relaxed"};
  std::printf("%-8s %6s %9s %6s | %9s %8s | %8s %8s %8s %8s\n", "mode", "elems", "producers", "stream", "round us",
              "failures", "release", "trip", "acquire", "read");
  for (int stream = 0; stream <= (major >= 9 ? 1 : 0); ++stream)
    for (const auto& sh : shapes)
      for (int mode : {kCounter, kRelaxed, kLL, kNoWait}) {
        const Result r = run(Config{mode, sh[0], std::min(sh[1], sms), stream}, sms, rounds, hbm, region);
        std::printf("%-8s %6d %9d %6s | %9.2f %8u | %8.2f %8.2f %8.2f %8.2f\n", names[mode], sh[0], std::min(sh[1], sms),
                    stream ? "yes" : "no", r.round_us, r.failures, r.release_us, r.trip_us, r.acquire_us, r.read_us);
      }
  PROBE_CHECK(cudaFree(hbm));
  return 0;
}
