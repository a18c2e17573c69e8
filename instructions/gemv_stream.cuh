// instructions/gemv_stream.cuh: a GEMV-like task whose weights arrive through the persistent
// kernel's shared-memory weight stream (vm/cuda/persistent_kernel.cu) instead of being loaded by
// the task. The kernel owns the stream (which bytes land in which slot, and when); this file owns
// the arithmetic, in two steps: gemv_stream_begin() stages prologue(x) in shared memory (from a
// plan the host decoded: no per-task decode on the device); gemv_stream_chunk() then consumes one
// chunk of whole weight rows from a ring slot and writes those rows' outputs. Per-row sums are deterministic (fixed warp
// assignment and summation order; no atomics), and the arithmetic is gemv_tile_block's: the same
// staged fp32 x, the same 16-byte dot, one cast per output.
#pragma once
#include "instructions/gemv_core.cuh"
#include "instructions/gemv_like.h"

namespace amk::instructions {

/// Partial sums one chunk may leave in shared memory: (rows, segments) pairs, at most
/// max(kStreamChunkMaxRows, warps).
inline constexpr int kStreamPartials = kStreamChunkMaxRows > gpu::kMaxWarps ? static_cast<int>(kStreamChunkMaxRows)
                                                                             : gpu::kMaxWarps;

/// Stage prologue(x) of the plan's one row in ctx.s_work in a single pass over x, and return the
/// factor gemv_stream_chunk applies to each row's sum: for RMSNORM the staged values are x * norm_w
/// and the factor is 1 / rms(x), summed in the same pass (sum_k W[n,k] x[k] nw[k] / rms ==
/// the reference's sum_k W[n,k] (x[k] / rms) nw[k] up to fp32 rounding); 1 otherwise. `plan`
/// was decoded by the host (gemv_stream_chunk_bytes admitted it). Whole block; ends with a barrier.
AMK_DEVICE float gemv_stream_begin(const GemvPlan& a, const DeviceCtx& ctx) {
  const int64_t K = a.mm.K, r = a.mm.m_begin;
  float* const s_x = ctx.s_work;
  compute_barrier();  // the previous task's last reads of s_work are done
  if (a.prologue != kGemvRmsNorm) {
    gemv_stage_x(a.mm, a.prologue, a.aux, 1.0f, r, 0, K, s_x);
    compute_barrier();
    return 1.0f;
  }
  float ss = 0.0f;
  if (vec8_ok(a.mm.x, r * K, K) && vec8_ok(a.aux, 0, K)) {
    for (int64_t k = block_tid() * 8; k < K; k += block_threads() * 8) {
      float v[8], w[8];
      load8(a.mm.x, r * K + k, v);
      load8(a.aux, k, w);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        ss = fmaf(v[j], v[j], ss);
        v[j] *= w[j];
      }
      reinterpret_cast<float4*>(s_x + k)[0] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(s_x + k)[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
  } else {
    for (int64_t k = block_tid(); k < K; k += block_threads()) {
      const float v = a.mm.x.load(r * K + k);
      ss = fmaf(v, v, ss);
      s_x[k] = v * a.aux.load(k);
    }
  }
  return rms_inv(compute_sum(ss, ctx.s_red), K, a.eps);  // block_sum's barriers publish s_x
}

/// The per-(row, segment) partial sums of one chunk into s_part (see gemv_stream_chunk).
template <int DT>
AMK_DEVICE void gemv_stream_rows(const GemvPlan& a, const char* w, int32_t rows, int nseg, float* s_part,
                                 const float* s_x) {
  constexpr int U = 4;
  constexpr int64_t kEpv = DT == AMK_DTYPE_F32 ? 4 : 8;
  const int64_t row_vecs = a.mm.K / kEpv;
  const int warps = compute_warps();
  const int64_t seg_vecs = (row_vecs + nseg - 1) / nseg;
  const int items = rows * nseg;
  for (int it = gpu::warp_id(); it < items; it += warps) {
    const int row = it / nseg, seg = it - row * nseg;
    const int64_t v0 = static_cast<int64_t>(seg) * seg_vecs;
    const int64_t v1 = v0 + seg_vecs < row_vecs ? v0 + seg_vecs : row_vecs;
    float acc[1] = {0.0f};
    if (v1 > v0) {
      const char* const rowp[1] = {w + (static_cast<int64_t>(row) * row_vecs + v0) * 16};
      gemv_chunk_vec<DT, 1, U, true>(rowp, s_x + v0 * kEpv, v1 - v0, acc);
    }
    acc[0] = gpu::warp_sum(acc[0]);
    if (gpu::lane_id() == 0) s_part[it] = acc[0];
  }
}

/// One chunk: output rows [n0, n0 + rows) of the plan's tile, whose weights are `w` (shared
/// memory, `rows` rows of K elements back to back). Each warp takes one (row, segment) pair at a
/// time, so a chunk of few long rows still keeps every warp busy; the segment sums go to
/// `s_part` and, after the block barrier that also frees the slot, the row's owner thread adds
/// them in order and writes y (+ bias, + residual). Whole block; `s_part` alternates between two
/// buffers from chunk to chunk, so the next chunk's writes never race this chunk's reads.
AMK_DEVICE void gemv_stream_chunk(const GemvPlan& a, const char* w, int64_t n0, int32_t rows, float scale,
                                  float* s_part, const DeviceCtx& ctx) {
  const int warps = compute_warps();
  const int nseg = rows >= warps ? 1 : warps / rows;  // segments per row: every warp has a pair
  const int32_t wdt = a.mm.w.dtype;
  if (wdt == AMK_DTYPE_BF16) gemv_stream_rows<AMK_DTYPE_BF16>(a, w, rows, nseg, s_part, ctx.s_work);
  else if (wdt == AMK_DTYPE_F16) gemv_stream_rows<AMK_DTYPE_F16>(a, w, rows, nseg, s_part, ctx.s_work);
  else gemv_stream_rows<AMK_DTYPE_F32>(a, w, rows, nseg, s_part, ctx.s_work);
  compute_barrier();  // the slot's bytes are read and the partial sums written
  const int64_t r = a.mm.m_begin;
  for (int t = static_cast<int>(threadIdx.x); t < rows; t += kComputeThreads) {
    float v = 0.0f;
    for (int s = 0; s < nseg; ++s) v += s_part[t * nseg + s];
    v *= scale;
    const int64_t n = n0 + t;
    const int64_t idx = r * a.mm.n_out + n;
    if (a.has_bias) v = v + a.bias.load(n);
    if (a.has_residual) v = v + a.residual.load(idx);
    a.mm.y.store(idx, v);
  }
}

}  // namespace amk::instructions
