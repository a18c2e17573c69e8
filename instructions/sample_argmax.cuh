// instructions/sample_argmax.cuh: SAMPLE_ARGMAX (17) on the device: each thread scans a strided
// slice (several loads in flight) with argmax_better() (sample_argmax.h: larger value, then lower index; NaN never wins),
// then a warp and a block tree with the same rule. The rule is associative and commutative, so
// the token equals the CPU scan's. All-NaN logits give token 0 (a tile: its first index; a
// combine: its first candidate). A combine checks every candidate before it writes anything.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/sample_argmax.h"
#include "instructions/vec8.cuh"

namespace amk::instructions {

/// One thread's best (value, index) so far; i = kArgmaxNone before any candidate.
struct ArgmaxBest {
  float v;
  int i;
};
inline constexpr int kArgmaxNone = 0x7fffffff;

/// This thread's share of an F32 scan over float4s [0, n4): kLoads4 float4 loads in flight, kept in
/// registers, before any compare. Its own function: inside sample_argmax_run, next to the
/// dtype-generic path, the compiler spilled (388 B) and issued the loads one at a time through
/// local memory (72 us for 128256 logits on an H200, docs/PERFORMANCE.md row 33).
/// Indices are `base` + 4 * (float4 position) + lane of the float4.
AMK_DEVICE_NOINLINE ArgmaxBest argmax_scan_f32(const float4* p4, int64_t n4, int64_t base) {
  constexpr int kLoads4 = 16;
  const int64_t threads = block_threads();
  const float nan = __int_as_float(0x7fc00000);  // never wins: pads the last round
  ArgmaxBest best{nan, kArgmaxNone};
  for (int64_t q0 = block_tid(); q0 < n4; q0 += threads * kLoads4) {
    float4 v[kLoads4];
#pragma unroll
    for (int u = 0; u < kLoads4; ++u) {
      const int64_t q = q0 + u * threads;
      v[u] = q < n4 ? p4[q] : make_float4(nan, nan, nan, nan);
    }
#pragma unroll
    for (int u = 0; u < kLoads4; ++u) {
      const int i = static_cast<int>(base + (q0 + u * threads) * 4);
      const float e[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (argmax_better(e[j], i + j, best.v, best.i)) best = ArgmaxBest{e[j], i + j};
      }
    }
  }
  return best;
}

/// This thread's best over all the logits (the whole scan): contiguous F32 logits go
/// 4 per float4, 16 float4 in flight (argmax_scan_f32); bf16 / f16 8 per 16-byte load (load8), 4
/// such loads in flight; the rest one by one. Several loads in flight per thread before any
/// compare: a plain strided loop was one dependent L2 round trip per 512 logits (117 us for a
/// 128256-entry vocabulary on an H200).
AMK_DEVICE ArgmaxBest argmax_scan_whole(const SampleArgmaxArgs& a) {
  const int64_t begin = a.begin, n = a.end - a.begin, threads = block_threads();
  ArgmaxBest best{__int_as_float(0x7fc00000), kArgmaxNone};  // NaN: anything non-NaN beats it
  auto consider = [&](float v, int64_t i) {
    if (argmax_better(v, i, best.v, best.i)) best = ArgmaxBest{v, static_cast<int>(i)};
  };
  int64_t done = 0;
  if (a.logits.dtype == AMK_DTYPE_F32 && vec8_ok(a.logits, begin, n / 8 * 8)) {
    const float4* p4 = reinterpret_cast<const float4*>(static_cast<const float*>(a.logits.ptr) + begin);
    best = argmax_scan_f32(p4, n / 4, begin);
    done = n / 4 * 4;
  } else if (vec8_ok(a.logits, begin, n / 8 * 8)) {
    constexpr int kLoads = 4;
    const int64_t n8 = n / 8 * 8;
    for (int64_t k0 = block_tid() * 8; k0 < n8; k0 += threads * 8 * kLoads) {
      float v[kLoads][8];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t k = k0 + u * threads * 8;
        if (k < n8) load8(a.logits, begin + k, v[u]);
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t k = k0 + u * threads * 8;
        if (k < n8) {
#pragma unroll
          for (int j = 0; j < 8; ++j) consider(v[u][j], begin + k + j);
        }
      }
    }
    done = n8;
  }
  constexpr int kInFlight = 8;
  for (int64_t i0 = done + block_tid(); i0 < n; i0 += threads * kInFlight) {
    float v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = i0 + u * threads;
      v[u] = i < n ? a.logits.load(begin + i) : __int_as_float(0x7fc00000);  // NaN never wins
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = i0 + u * threads;
      if (i < n) consider(v[u], begin + i);
    }
  }
  return best;
}

/// This thread's best over a tile [a.begin, a.end): a compact loop (one float4 or one element per
/// iteration, not unrolled). A tile is ~1000 logits per SM, one load per thread, so deep
/// unrolling buys nothing there, and its code would be fetched cold: the task runs once per token
/// on an SM that has just streamed the LM head through its caches.
AMK_DEVICE_NOINLINE ArgmaxBest argmax_scan_tile(const SampleArgmaxArgs& a) {
  const int64_t begin = a.begin, n = a.end - a.begin, threads = block_threads();
  ArgmaxBest best{__int_as_float(0x7fc00000), kArgmaxNone};
  int64_t done = 0;
  if (a.logits.dtype == AMK_DTYPE_F32 && vec8_ok(a.logits, begin, n / 8 * 8)) {
    const float4* p4 = reinterpret_cast<const float4*>(static_cast<const float*>(a.logits.ptr) + begin);
#pragma unroll 1
    for (int64_t q = block_tid(); q < n / 4; q += threads) {
      const float4 v = p4[q];
      const int i = static_cast<int>(begin + q * 4);
      if (argmax_better(v.x, i, best.v, best.i)) best = ArgmaxBest{v.x, i};
      if (argmax_better(v.y, i + 1, best.v, best.i)) best = ArgmaxBest{v.y, i + 1};
      if (argmax_better(v.z, i + 2, best.v, best.i)) best = ArgmaxBest{v.z, i + 2};
      if (argmax_better(v.w, i + 3, best.v, best.i)) best = ArgmaxBest{v.w, i + 3};
    }
    done = n / 4 * 4;
  }
#pragma unroll 1
  for (int64_t i = done + block_tid(); i < n; i += threads) {
    const float v = a.logits.load(begin + i);
    if (argmax_better(v, begin + i, best.v, best.i)) best = ArgmaxBest{v, static_cast<int>(begin + i)};
  }
  return best;
}

/// SAMPLE_ARGMAX, whole block: the whole scan, a tile, or a combine over candidates. Uses
/// 2 * warps words of ctx.s_work.
AMK_DEVICE_NOINLINE int32_t sample_argmax_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  SampleArgmaxArgs* const s_args = shared_args<SampleArgmaxArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](SampleArgmaxArgs* out) { return decode_sample_argmax(p, inst, out); }));
  const SampleArgmaxArgs& a = *s_args;
  ArgmaxBest best{__int_as_float(0x7fc00000), kArgmaxNone};
  int64_t fallback = a.begin;  // the index written when every value seen is NaN
  if (a.form == ArgmaxForm::kCombine) {
    // A few hundred candidates at most (one per tile): one gather each, checked before any write.
    int bad = 0;
    for (int64_t c = block_tid(); c < a.candidates.numel; c += block_threads()) {
      int64_t i = 0;
      if (argmax_candidate(a, c, &i) != AMK_DEVERR_NONE) {
        bad = 1;
        continue;
      }
      const float v = a.logits.load(i);
      if (argmax_better(v, i, best.v, best.i)) best = ArgmaxBest{v, static_cast<int>(i)};
    }
    if (compute_any(bad)) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
    fallback = static_cast<const int32_t*>(a.candidates.ptr)[a.candidates.offset(0)];
  } else if (a.form == ArgmaxForm::kTile) {
    best = argmax_scan_tile(a);
  } else {
    best = argmax_scan_whole(a);
  }
  for (int m = gpu::kWarpSize / 2; m >= 1; m >>= 1) {
    const float ov = gpu::shfl_xor(best.v, m);
    const int oi = gpu::shfl_xor(best.i, m);
    if (oi != kArgmaxNone && (best.i == kArgmaxNone || argmax_better(ov, oi, best.v, best.i))) best = ArgmaxBest{ov, oi};
  }
  float* s_v = ctx.s_work;
  int* s_i = reinterpret_cast<int*>(ctx.s_work + gpu::kMaxWarps);
  if (gpu::lane_id() == 0) {
    s_v[gpu::warp_id()] = best.v;
    s_i[gpu::warp_id()] = best.i;
  }
  compute_barrier();
  if (threadIdx.x == 0) {
    float v = s_v[0];
    int idx = s_i[0];
    for (int w = 1; w < compute_warps(); ++w) {
      if (s_i[w] != kArgmaxNone && (idx == kArgmaxNone || argmax_better(s_v[w], s_i[w], v, idx))) {
        v = s_v[w];
        idx = s_i[w];
      }
    }
    *argmax_result(a) = idx == kArgmaxNone ? static_cast<int32_t>(fallback) : idx;
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
