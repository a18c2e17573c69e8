// tools/profiling/stream_probe.cu (amk-stream-probe): how fast can ONE SM stream weights from
// HBM, in isolation from the megakernel's counters, hops and task boundaries? Single-stream
// decode needs copy bandwidth / SMs per SM (32 GB/s on an H200); the megakernel's GEMV stages
// reach 13-24 (docs/PERFORMANCE.md). This probe separates the candidates:
//
//   ring   the megakernel's shape: a loader warp whose lane 0 keeps `slots` shared-memory slots
//          of `slot` KiB busy with TMA bulk copies (`copies` per slot), the compute warps that wait
//          on each slot's mbarrier, consume it and free it (every compute thread arrives, as in
//          vm/cuda/persistent_kernel.cu). consume=none frees at once (the TMA rate alone);
//          consume=read reads the slot's words and sums them; consume=gemv runs the megakernel's
//          streamed-GEMV code on each chunk (instructions/gemv_stream.cuh: bf16 rows of K
//          elements against an fp32 x in shared memory). "stg": each SM starts at a different
//          chunk of its region (do simultaneous starts at the same offsets collide?). "pol": the
//          loader also polls a global counter between refills, as the megakernel's loader polls
//          the next task's counters (does a lane blocked on that load starve the ring?). "tsk":
//          every N chunks the compute warps stage x from global memory first, as a megakernel
//          task begins; "t+y": also each chunk's row sums stored to global memory (the task's y).
//   ld     no ring: every warp streams rows with 16-byte loads (gemv_tile_block's inner loop,
//          2 rows x 4 loads per lane in flight), the path tasks take without the ring.
//
// Each block reads its own disjoint KiB (8 MiB, or --kib: 508 KiB is one Llama-1B gate_proj task);
// L2 is flushed before every timed launch, so the bytes come from HBM. Every configuration runs
// on one SM alone (its own limit) and on every SM (the share each gets when all stream). Rates
// come from each block's own start / finish stamps (no launch overhead). The phase columns are
// one SM's average chunk (ring only). --only ROW runs one row, e.g. under ncu. sm_90 for the ring.
//
// --same: every block reads the SAME region and L2 is not flushed, so after the warm-up launch the
// bytes come from L2, and all SMs ask for the same lines at once: the access of an attention
// recomputed in every o_proj tile (docs/ATTENTION_IN_O.md: 256 KiB of K / V per SM at ctx 128,
// `--same --kib 256`).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define PROBE_NAME "amk-stream-probe"
#include "tools/profiling/probe_check.h"

#include "instructions/device_common.cuh"
#include "instructions/gemv_stream.cuh"
#include "targets/cuda/bulk_copy.cuh"
#include "vm/cuda/dyn_smem_layout.h"
#include "vm/cuda/stage_handoff.cuh"

namespace {

using amk::instructions::kComputeThreads;
using amk::instructions::kComputeWarps;
constexpr int kThreads = amk::instructions::kBlockThreads;

struct ProbeArgs {
  const char* src;
  long long bytes_per_block;  // a multiple of the chunk
  int slots, slot_bytes, copies;
  int row_bytes;  // consume=gemv: bytes of one bf16 row (K * 2)
  int consume;    // 0 none, 1 gemv, 2 read
  int stagger;    // 1: block b streams its chunks starting at chunk 7b (mod its count), not at 0
  amk::instructions::StreamSplit split;  // consume=gemv: how the warps share out a chunk (the host's)
  int poll_ns;    // > 0: the loader also polls a global counter every poll_ns, as the megakernel's does
  int task_chunks;  // > 0: every task_chunks chunks the compute warps stage x from global first
  const float* x_src;  // what they stage (K floats, the same for every block, as in the megakernel)
  float* y_dst;        // non-null: each chunk's row sums go to global memory, one per row
  const unsigned* counter;  // what it polls (never reaches its target)
  float* sink;    // one float per block: keeps the arithmetic alive
  unsigned long long* timeline;  // block 0, per chunk: issued, wait begun, landed (seen), consumed (ns)
  unsigned long long* span;      // per block: when its compute thread 0 started and finished (ns)
  unsigned* smid;                // per block, or nullptr: the SM it ran on (--per-sm)
  int ring_skew;  // the ring starts ring_skew bytes past a 1024-byte boundary (--ring-skew)
  int evict_first;  // 1: the copies carry the megakernel's L2 evict-first policy (--evict-first)
  long long block_stride;  // bytes between blocks' regions: bytes_per_block, or 0 (--same)
};

#if AMK_HAVE_BULK_COPY
/// One chunk of whole bf16 rows in shared memory, consumed by the megakernel's own code
/// (gemv_stream_chunk without the plan: the host's split, the partial sums, the barrier, the owner
/// threads' sums); returns this thread's share of the row sums.
__device__ float consume_gemv(const char* w, const amk::instructions::StreamSplit& sp, int row_bytes,
                              const float* s_x, float* s_part) {
  amk::instructions::gemv_stream_partials<AMK_DTYPE_BF16>(w, row_bytes / 16, sp, s_x, s_part);
  amk::instructions::compute_barrier();
  float total = 0.0f;
  if (static_cast<int>(threadIdx.x) < sp.rows)
    for (int s = 0; s < sp.nseg; ++s) total += s_part[threadIdx.x * sp.nseg + s];
  return total;
}

/// The weight reads alone: every compute thread reads its 16-byte words of the chunk (consecutive
/// lanes, consecutive words) and sums them, then the compute barrier.
__device__ float consume_read(const char* w, int chunk_bytes) {
  float total = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < chunk_bytes / 16; i += kComputeThreads) {
    const uint4 v = *reinterpret_cast<const uint4*>(w + 16ll * i);
    total += __uint_as_float(v.x) + __uint_as_float(v.y) + __uint_as_float(v.z) + __uint_as_float(v.w);
  }
  amk::instructions::compute_barrier();
  return total;
}
#endif  // AMK_HAVE_BULK_COPY

__global__ void __launch_bounds__(kThreads, 1) ring_probe(ProbeArgs a) {
#if AMK_HAVE_BULK_COPY
  constexpr int kMaxSlots = 8;  // the host's configurations use at most 3
  extern __shared__ float4 s_dyn[];
  __shared__ uint64_t bar[kMaxSlots];
  __shared__ amk::vm::gpuvm::StageHandoff freed[kMaxSlots];
  __shared__ float s_part[2][amk::instructions::kStreamPartials];
  // The ring at a chosen offset from a 1024-byte boundary (the host asked for the slack): its
  // address mod 64 moved the megakernel by 7% (docs/PERFORMANCE.md, row 81).
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(s_dyn));
  char* ring = reinterpret_cast<char*>(s_dyn) + amk::vm::gpuvm::dyn_smem_align_skip(at) + a.ring_skew;
  float* s_x = reinterpret_cast<float*>(ring + static_cast<long long>(a.slots) * a.slot_bytes);
  const long long chunks = a.bytes_per_block / a.slot_bytes;
  const char* src = a.src + blockIdx.x * a.block_stride;
  if (threadIdx.x == 0) {
    for (int i = 0; i < a.slots; ++i) {
      amk::gpu::mbarrier_init(&bar[i], static_cast<uint32_t>(a.copies));
      freed[i].init(kComputeThreads);
    }
    amk::gpu::mbarrier_init_fence();
  }
  for (int k = threadIdx.x; k < a.row_bytes / 2; k += kThreads) s_x[k] = 1.0f / static_cast<float>(1 + (k & 7));
  __syncthreads();
  if (threadIdx.x == 0 && a.span != nullptr) a.span[2 * blockIdx.x] = amk::gpu::global_timer_ns();
  if (threadIdx.x == 0 && a.smid != nullptr) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    a.smid[blockIdx.x] = id;
  }
  if (threadIdx.x >= kComputeThreads) {  // the loader warp; lane 0 issues
    if (amk::gpu::lane_id() != 0) return;
    const int piece = a.slot_bytes / a.copies;
    long long next_poll = 0;
    for (long long n = 0; n < chunks; ++n) {
      const int s = static_cast<int>(n % a.slots);
      if (a.poll_ns > 0) {  // the megakernel loader's loop: refill when free, else poll a counter
        while (n >= a.slots && !freed[s].test(static_cast<uint32_t>(n / a.slots - 1))) {
          if (clock64() < next_poll) continue;
          // A relaxed load whose value is used at once: the lane waits a full L2 round trip.
          if (amk::gpu::load_relaxed_gpu(a.counter) == 0xfeedu) a.sink[blockIdx.x] = 1.0f;
          next_poll = clock64() + 2ll * a.poll_ns;
        }
      }
      if (n >= a.slots) freed[s].wait(static_cast<uint32_t>(n / a.slots - 1));
      if (a.timeline != nullptr && blockIdx.x == 0) a.timeline[4 * n] = amk::gpu::global_timer_ns();
      for (int c = 0; c < a.copies; ++c) {
        char* const dst = ring + static_cast<long long>(s) * a.slot_bytes + c * piece;
        const char* const from = src + (a.stagger ? (n + 7ll * blockIdx.x) % chunks : n) * a.slot_bytes + c * piece;
        if (a.evict_first) amk::gpu::bulk_copy_once_to_shared(dst, from, piece, &bar[s]);  // the megakernel's copy
        else amk::gpu::bulk_copy_to_shared(dst, from, piece, &bar[s]);
      }
    }
    for (long long n = chunks > a.slots ? chunks - a.slots : 0; n < chunks; ++n)
      amk::gpu::mbarrier_wait_parity(&bar[n % a.slots], static_cast<uint32_t>((n / a.slots) & 1));
    return;
  }
  float total = 0.0f;
  for (long long n = 0; n < chunks; ++n) {
    const int s = static_cast<int>(n % a.slots);
    const bool stamp = a.timeline != nullptr && blockIdx.x == 0 && threadIdx.x == 0;
    if (a.task_chunks > 0 && n % a.task_chunks == 0) {  // a task's start: x staged from L2
      amk::instructions::compute_barrier();  // the previous task's reads of s_x are done
      const int K = a.row_bytes / 2;
      for (int k = static_cast<int>(threadIdx.x) * 8; k < K; k += kComputeThreads * 8) {
        const float4 lo = *reinterpret_cast<const float4*>(a.x_src + k);
        const float4 hi = *reinterpret_cast<const float4*>(a.x_src + k + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        amk::instructions::store_x8(s_x, k, K, true, v);  // bf16 rows: the planar layout
      }
      amk::instructions::compute_barrier();
    }
    if (stamp) a.timeline[4 * n + 1] = amk::gpu::global_timer_ns();
    amk::gpu::mbarrier_wait_parity(&bar[s], static_cast<uint32_t>((n / a.slots) & 1));
    if (stamp) a.timeline[4 * n + 2] = amk::gpu::global_timer_ns();
    if (a.consume == 1) {
      const float sum = consume_gemv(ring + static_cast<long long>(s) * a.slot_bytes, a.split, a.row_bytes, s_x,
                                     s_part[n & 1]);  // ends with a compute barrier after its last slot read
      if (a.y_dst != nullptr && static_cast<int>(threadIdx.x) < a.split.rows)
        a.y_dst[blockIdx.x * amk::instructions::kStreamChunkMaxRows + threadIdx.x] = sum;
      else total += sum;
    } else if (a.consume == 2) {
      total += consume_read(ring + static_cast<long long>(s) * a.slot_bytes, a.slot_bytes);
    }
    if (stamp) a.timeline[4 * n + 3] = amk::gpu::global_timer_ns();
    freed[s].arrive();
  }
  if (threadIdx.x == 0 && a.span != nullptr) a.span[2 * blockIdx.x + 1] = amk::gpu::global_timer_ns();
  if (amk::gpu::lane_id() == 0 && total == 12345.0f) a.sink[blockIdx.x] = total;
#else
  (void)a;
#endif  // AMK_HAVE_BULK_COPY
}

/// No ring: every warp of the block streams rows of its block's region with 16-byte loads, two
/// rows per warp and four loads per row in flight per lane (gemv_tile_block's shape).
__global__ void __launch_bounds__(kThreads, 1) ld_probe(ProbeArgs a) {
  extern __shared__ float4 s_dyn[];
  float* s_x = reinterpret_cast<float*>(s_dyn);
  for (int k = threadIdx.x; k < a.row_bytes / 2; k += kThreads) s_x[k] = 1.0f / static_cast<float>(1 + (k & 7));
  __syncthreads();
  if (threadIdx.x == 0 && a.span != nullptr) a.span[2 * blockIdx.x] = amk::gpu::global_timer_ns();
  const char* src = a.src + blockIdx.x * a.block_stride;
  const long long rows = a.bytes_per_block / a.row_bytes;
  const int warps = kThreads / 32, warp = threadIdx.x / 32;
  float total = 0.0f;
  for (long long r0 = 2ll * warp; r0 < rows; r0 += 2ll * warps) {
    const char* rowp[2] = {src + r0 * a.row_bytes, src + (r0 + 1 < rows ? r0 + 1 : rows - 1) * a.row_bytes};
    float acc[2] = {0.0f, 0.0f};
    amk::instructions::gemv_chunk_vec<AMK_DTYPE_BF16, 2, 4>(rowp, s_x, a.row_bytes / 16, acc);
    total += amk::gpu::warp_sum(acc[0] + acc[1]);
  }
  __syncthreads();
  if (threadIdx.x == 0 && a.span != nullptr) a.span[2 * blockIdx.x + 1] = amk::gpu::global_timer_ns();
  if ((threadIdx.x & 31) == 0 && total == 12345.0f) a.sink[blockIdx.x] = total;
}

/// Evict the probe's region from L2 by reading another buffer (a memset would leave L2 full of
/// dirty lines, whose write-backs then share HBM with the next launch's reads: a short stream
/// measured 30% slow for that alone).
__global__ void read_flush(const uint4* p, size_t n, unsigned* sink) {
  unsigned x = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x ^= p[i].x ^ p[i].w;
  if (x == 0x12345678u) *sink = x;
}

void flush_l2(const char* flush, size_t bytes, float* sink) {
  read_flush<<<1024, 256>>>(reinterpret_cast<const uint4*>(flush), bytes / 16, reinterpret_cast<unsigned*>(sink));
  PROBE_CHECK(cudaGetLastError());
}

struct Config {
  std::string kind;  // ring | ld
  int slots = 3, slot_kib = 48, copies = 1, k = 2048, consume = 1, stagger = 0;
  int poll_ns = 0;  // the loader polls a global counter between refills, this far apart (0: never)
  int task_chunks = 0;  // a megakernel-like task every this many chunks: x staged from global first
  int store_y = 0;      // 1: each chunk's row sums stored to global memory, as the tasks' y
};

/// Block 0's average chunk, from the ring's timeline (ns): how long the compute warps waited for
/// it, how long they took to consume it, how long after its copy was issued they saw it land, and
/// how long the loader took to refill the slot once it was freed.
struct Phases {
  double wait = 0, consume = 0, issue_to_seen = 0, free_to_issue = 0;
};

Phases phases(const std::vector<unsigned long long>& t, long long chunks, int slots) {
  Phases p;
  long long n0 = 2ll * slots, count = 0;
  for (long long n = n0; n < chunks; ++n, ++count) {
    p.wait += static_cast<double>(t[4 * n + 2] - t[4 * n + 1]);
    p.consume += static_cast<double>(t[4 * n + 3] - t[4 * n + 2]);
    p.issue_to_seen += static_cast<double>(t[4 * n + 2] - t[4 * n]);
    p.free_to_issue += static_cast<double>(t[4 * n]) - static_cast<double>(t[4 * (n - slots) + 3]);
  }
  if (count > 0) {
    p.wait /= count;
    p.consume /= count;
    p.issue_to_seen /= count;
    p.free_to_issue /= count;
  }
  return p;
}

/// GB/s: the median block's own rate, and the launch's (all bytes over first start to last finish).
struct Rate {
  double per_sm, total;
};

int g_ring_skew = static_cast<int>(amk::vm::gpuvm::kRingSkewDefault);  // --ring-skew: the megakernel's default
int g_evict_first = 0;  // --evict-first
bool g_same = false;    // --same: one region for every block, left in L2
bool g_per_sm = false;  // --per-sm: per_sm_report() alone

/// The kernel arguments of configuration `c` on `blocks` blocks of `kib` KiB each, and in *smem the
/// dynamic shared memory its kernel needs.
ProbeArgs probe_args(const Config& c, int blocks, long long kib, char* src, char* flush, float* sink, size_t* smem) {
  ProbeArgs a{};
  a.src = src;
  a.slots = c.slots;
  a.slot_bytes = c.slot_kib * 1024;
  a.copies = c.copies;
  a.row_bytes = c.k * 2;
  a.consume = c.consume;
  a.stagger = c.stagger;
  a.poll_ns = c.poll_ns;
  a.task_chunks = c.task_chunks;
  a.x_src = reinterpret_cast<const float*>(flush);  // K floats of 1s' bit pattern, L2-resident after the first task
  a.y_dst = c.store_y ? sink + blocks + 4 : nullptr;
  a.counter = reinterpret_cast<const unsigned*>(sink) + blocks;  // zeroed, past the blocks' sinks
  a.sink = sink;
  a.ring_skew = g_ring_skew;
  a.evict_first = g_evict_first;
  // Whole chunks of whole rows: the slot is shrunk to a multiple of the row, as the host does.
  if (c.kind == "ring") a.slot_bytes = (a.slot_bytes / a.row_bytes) * a.row_bytes;
  const long long unit = c.kind == "ring" ? a.slot_bytes : a.row_bytes;
  a.split = amk::instructions::gemv_stream_split(a.slot_bytes / a.row_bytes, a.row_bytes / 16, kComputeWarps,
                                                 amk::gpu::kWarpSize);
  a.bytes_per_block = (kib * 1024 / unit) * unit;
  a.block_stride = g_same ? 0 : a.bytes_per_block;
  *smem = static_cast<size_t>(a.row_bytes / 2) * 4;
  if (c.kind == "ring")  // + the alignment's slack and the largest skew
    *smem += static_cast<size_t>(a.slots) * a.slot_bytes + amk::vm::gpuvm::kDynSmemSlack + amk::vm::gpuvm::kRingSkewMax;
  return a;
}

Rate run_config(const Config& c, int blocks, long long kib, char* src, char* flush, size_t flush_bytes, float* sink,
                  Phases* ph) {
  size_t smem = 0;
  ProbeArgs a = probe_args(c, blocks, kib, src, flush, sink, &smem);
  auto kernel = c.kind == "ring" ? ring_probe : ld_probe;
  PROBE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  // Rates from each block's own start and finish stamps (no launch overhead in them, which
  // matters for short streams): the median block's rate, and all bytes over the launch's span.
  unsigned long long* d_span = nullptr;
  PROBE_CHECK(cudaMalloc(&d_span, 2 * blocks * sizeof(unsigned long long)));
  a.span = d_span;
  std::vector<double> per_sm, total;
  std::vector<unsigned long long> span(2 * blocks);
  for (int rep = 0; rep < 4; ++rep) {
    if (!g_same) flush_l2(flush, flush_bytes, sink);
    kernel<<<blocks, kThreads, smem>>>(a);
    PROBE_CHECK(cudaDeviceSynchronize());
    PROBE_CHECK(cudaGetLastError());
    PROBE_CHECK(cudaMemcpy(span.data(), d_span, span.size() * sizeof(span[0]), cudaMemcpyDeviceToHost));
    if (rep == 0) continue;  // warm-up
    std::vector<double> rates;
    unsigned long long lo = span[0], hi = span[1];
    for (int b = 0; b < blocks; ++b) {
      rates.push_back(static_cast<double>(a.bytes_per_block) / static_cast<double>(span[2 * b + 1] - span[2 * b]));
      lo = std::min(lo, span[2 * b]);
      hi = std::max(hi, span[2 * b + 1]);
    }
    std::sort(rates.begin(), rates.end());
    per_sm.push_back(rates[rates.size() / 2]);
    total.push_back(static_cast<double>(a.bytes_per_block) * blocks / static_cast<double>(hi - lo));
  }
  PROBE_CHECK(cudaFree(d_span));
  a.span = nullptr;
  if (ph != nullptr && c.kind == "ring") {  // once more, with the timeline
    const long long chunks = a.bytes_per_block / a.slot_bytes;
    unsigned long long* d_t = nullptr;
    PROBE_CHECK(cudaMalloc(&d_t, 4 * chunks * sizeof(unsigned long long)));
    a.timeline = d_t;
    if (!g_same) flush_l2(flush, flush_bytes, sink);
    kernel<<<blocks, kThreads, smem>>>(a);
    PROBE_CHECK(cudaDeviceSynchronize());
    std::vector<unsigned long long> t(4 * chunks);
    PROBE_CHECK(cudaMemcpy(t.data(), d_t, t.size() * sizeof(t[0]), cudaMemcpyDeviceToHost));
    PROBE_CHECK(cudaFree(d_t));
    *ph = phases(t, chunks, a.slots);
  }
  std::sort(per_sm.begin(), per_sm.end());
  std::sort(total.begin(), total.end());
  return Rate{per_sm[per_sm.size() / 2], total[total.size() / 2]};  // bytes per ns = GB/s
}

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

/// --per-sm: is one SM's share of HBM a property of that SM? Every SM streams the same bytes
/// through the megakernel's ring (2 x 64 KiB, its GEMV consumer, 8B rows), `reps` launches with
/// L2 flushed; each block's time over the launch's median block time is charged to the SM it ran
/// on (%smid). Prints the spread, whether the same SMs are slow in every launch (the correlation
/// of each SM's mean over the even launches with its mean over the odd ones), whether block b
/// lands on the same SM in every launch, and every SM's mean ratio by SM id. A static schedule
/// waits for its slowest SM at the end of each stage (docs/PERFORMANCE.md row 210).
void per_sm_report(int sms, long long kib, char* src, char* flush, size_t flush_bytes, float* sink) {
  const Config c{"ring", 2, 64, 1, 8192, 1};
  size_t smem = 0;
  ProbeArgs a = probe_args(c, sms, kib, src, flush, sink, &smem);
  a.block_stride = a.bytes_per_block;  // its own bytes per block, whatever --same says
  a.evict_first = 1;                   // the megakernel's copies
  PROBE_CHECK(cudaFuncSetAttribute(ring_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  unsigned long long* d_span = nullptr;
  unsigned* d_smid = nullptr;
  PROBE_CHECK(cudaMalloc(&d_span, 2 * sms * sizeof(unsigned long long)));
  PROBE_CHECK(cudaMalloc(&d_smid, sms * sizeof(unsigned)));
  a.span = d_span;
  a.smid = d_smid;
  constexpr int kReps = 12;
  std::vector<unsigned long long> span(2 * sms);
  std::vector<unsigned> smid(sms), first_smid;
  int max_id = 0;
  std::vector<std::vector<double>> ratio_by_sm(kReps);  // [rep][smid]
  int same_placement = 0;
  std::vector<double> spread;
  for (int rep = 0; rep <= kReps; ++rep) {
    flush_l2(flush, flush_bytes, sink);
    ring_probe<<<sms, kThreads, smem>>>(a);
    PROBE_CHECK(cudaDeviceSynchronize());
    PROBE_CHECK(cudaGetLastError());
    PROBE_CHECK(cudaMemcpy(span.data(), d_span, span.size() * sizeof(span[0]), cudaMemcpyDeviceToHost));
    PROBE_CHECK(cudaMemcpy(smid.data(), d_smid, smid.size() * sizeof(smid[0]), cudaMemcpyDeviceToHost));
    if (rep == 0) continue;  // warm-up
    std::vector<double> t(sms);
    for (int b = 0; b < sms; ++b) t[b] = static_cast<double>(span[2 * b + 1] - span[2 * b]);
    std::vector<double> sorted = t;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted[sms / 2];
    spread.push_back(sorted.back() / med);
    for (int b = 0; b < sms; ++b) max_id = std::max(max_id, static_cast<int>(smid[b]));
    ratio_by_sm[rep - 1].assign(2 * sms + 8, 0.0);
    for (int b = 0; b < sms; ++b)
      if (smid[b] < ratio_by_sm[rep - 1].size()) ratio_by_sm[rep - 1][smid[b]] = t[b] / med;
    if (first_smid.empty()) first_smid = smid;
    else if (smid == first_smid) ++same_placement;
  }
  PROBE_CHECK(cudaFree(d_span));
  PROBE_CHECK(cudaFree(d_smid));
  std::vector<double> even, odd, mean;
  std::vector<int> ids;
  for (int id = 0; id <= max_id; ++id) {
    double e = 0, o = 0;
    int ne = 0, no = 0;
    for (int r = 0; r < kReps; ++r) {
      const double v = ratio_by_sm[r][id];
      if (v <= 0) continue;
      (r % 2 == 0 ? e : o) += v;
      (r % 2 == 0 ? ne : no) += 1;
    }
    if (ne == 0 || no == 0) continue;
    ids.push_back(id);
    even.push_back(e / ne);
    odd.push_back(o / no);
    mean.push_back((e + o) / (ne + no));
  }
  std::sort(spread.begin(), spread.end());
  std::vector<double> ms = mean;
  std::sort(ms.begin(), ms.end());
  std::printf("per-SM: %d SMs x %lld KiB through 2 x 64 KiB rings (K 8192, the GEMV consumer), %d launches\n", sms,
              a.bytes_per_block / 1024, kReps);
  std::printf("slowest block / median block, per launch: median %.3f, max %.3f\n", spread[spread.size() / 2],
              spread.back());
  std::printf("each SM's mean ratio: p10 %.3f median %.3f p90 %.3f max %.3f; even ~ odd launches correlation %.2f over "
              "%zu SMs; block -> SM placement identical to the first launch in %d of %d launches\n",
              ms[ms.size() / 10], ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back(), correlation(even, odd),
              ids.size(), same_placement, kReps - 1);
  std::printf("ratio by smid:");
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d:%.3f", i % 12 == 0 ? "\n  " : " ", ids[i], mean[i]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  long long kib = 8192;  // per block; 132 x 8 MiB = 1 GiB, far beyond L2
  int only = -1;      // one configuration (its row, from 0), e.g. under ncu
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--kib" && i + 1 < argc) kib = std::atoll(argv[++i]);
    else if (s == "--only" && i + 1 < argc) only = std::atoi(argv[++i]);
    else if (s == "--ring-skew" && i + 1 < argc) g_ring_skew = std::atoi(argv[++i]) & static_cast<int>(amk::vm::gpuvm::kRingSkewMax);  // 16-byte steps
    else if (s == "--evict-first") g_evict_first = 1;
    else if (s == "--same") g_same = true;
    else if (s == "--per-sm") g_per_sm = true;
    else {
      std::fprintf(stderr,
                   "usage: amk-stream-probe [--kib KiB_per_SM] [--only ROW] [--ring-skew BYTES] [--evict-first] [--same] "
                   "[--per-sm]\n");
      return 2;
    }
  }
  if (kib < 64) {
    std::fprintf(stderr, "amk-stream-probe: --kib must be at least 64\n");
    return 2;
  }
  int dev = 0, sms = 0, major = 0, minor = 0;
  PROBE_CHECK(cudaGetDevice(&dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  PROBE_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s (sm_%d%d, %d SMs)%s\n", prop.name, major, minor, sms,
              g_same ? ", --same: every SM reads one L2-resident region" : "");
  char* src = nullptr;
  char* flush = nullptr;
  float* sink = nullptr;
  const size_t bytes = static_cast<size_t>(sms) * kib * 1024;
  const size_t flush_bytes = 256u << 20;
  PROBE_CHECK(cudaMalloc(&src, bytes));
  PROBE_CHECK(cudaMalloc(&flush, flush_bytes));
  PROBE_CHECK(cudaMemset(flush, 1, flush_bytes));
  // + the counter the "pol" rows poll, then room for the y rows store
  const size_t sink_floats = sms + 4 + static_cast<size_t>(sms) * amk::instructions::kStreamChunkMaxRows;
  PROBE_CHECK(cudaMalloc(&sink, sink_floats * sizeof(float)));
  PROBE_CHECK(cudaMemset(sink, 0, sink_floats * sizeof(float)));
  PROBE_CHECK(cudaMemset(src, 0x3c, bytes));  // bf16 ~0.0115: finite sums
  if (g_per_sm) {
    if (major < 9) {
      std::fprintf(stderr, "amk-stream-probe: --per-sm needs the ring (sm_90)\n");
      return 2;
    }
    per_sm_report(sms, kib, src, flush, flush_bytes, sink);
    PROBE_CHECK(cudaFree(src));
    PROBE_CHECK(cudaFree(flush));
    PROBE_CHECK(cudaFree(sink));
    return 0;
  }
  std::vector<Config> configs;
  if (major >= 9) {
    configs.push_back({"ring", 3, 48, 1, 2048, 0});  // the TMA stream alone
    configs.push_back({"ring", 2, 64, 1, 2048, 0});
    configs.push_back({"ring", 3, 48, 4, 2048, 0});
    configs.push_back({"ring", 3, 48, 1, 2048, 2});  // the slot reads alone
    configs.push_back({"ring", 3, 48, 1, 2048, 0, 1});  // staggered starts
    configs.push_back({"ring", 3, 48, 1, 2048, 1, 1});
    for (int k : {2048, 4096, 8192, 14336}) configs.push_back({"ring", 2, 64, 1, k, 1});  // 1B / 8B rows
    // The megakernel's loader also polls the next task's counters between refills (200 ns apart).
    configs.push_back({"ring", 2, 64, 1, 2048, 1, 0, 200});
    configs.push_back({"ring", 2, 64, 1, 8192, 1, 0, 200});
    // The megakernel's task structure: x staged from global every 8 chunks (a 1B gate / up task)
    // or every 2 (q / k / v), then also y stored per chunk.
    configs.push_back({"ring", 2, 64, 1, 2048, 1, 0, 0, 8});
    configs.push_back({"ring", 2, 64, 1, 2048, 1, 0, 0, 8, 1});
    configs.push_back({"ring", 2, 64, 1, 2048, 1, 0, 0, 2, 1});
    configs.push_back({"ring", 2, 64, 1, 8192, 1, 0, 0, 4, 1});
  }
  for (int k : {2048, 8192}) configs.push_back({"ld", 0, 0, 0, k, 1});
  // The phase columns are one SM's average chunk, in us (ring only).
  if (only >= static_cast<int>(configs.size())) {
    std::fprintf(stderr, "amk-stream-probe: --only %d: this device has rows 0..%zu\n", only, configs.size() - 1);
    return 2;
  }
  std::printf("%-5s %5s %4s %6s %6s %-9s %9s %9s %10s | %6s %7s %12s %12s\n", "kind", "slots", "KiB", "copies", "K",
              "consume", "1 SM GB/s", "all GB/s", "all GB/s/SM", "wait", "consume", "issue->seen", "free->issue");
  const char* consume_names[] = {"none", "gemv", "read"};
  for (size_t row = 0; row < configs.size(); ++row) {
    if (only >= 0 && static_cast<size_t>(only) != row) continue;
    const Config& c = configs[row];
    Phases ph;
    const double one = run_config(c, 1, kib, src, flush, flush_bytes, sink, &ph).per_sm;
    const Rate all = run_config(c, sms, kib, src, flush, flush_bytes, sink, nullptr);
    const char* tag = c.poll_ns > 0 ? " pol" : c.task_chunks > 0 ? (c.store_y ? " t+y" : " tsk") : c.stagger ? " stg" : "";
    std::printf("%-5s %5d %4d %6d %6d %-5s%-4s %9.1f %9.0f %10.1f | %6.2f %7.2f %12.2f %12.2f\n", c.kind.c_str(), c.slots,
                c.slot_kib, c.copies, c.k, consume_names[c.consume], tag, one, all.total, all.per_sm, ph.wait * 1e-3,
                ph.consume * 1e-3, ph.issue_to_seen * 1e-3, ph.free_to_issue * 1e-3);
  }
  PROBE_CHECK(cudaFree(src));
  PROBE_CHECK(cudaFree(flush));
  PROBE_CHECK(cudaFree(sink));
  return 0;
}
