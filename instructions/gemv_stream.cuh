// instructions/gemv_stream.cuh: a GEMV-like task whose weights arrive through the persistent
// kernel's shared-memory weight stream (vm/cuda/persistent_kernel.cu) instead of being loaded by
// the task. The kernel owns the stream (which bytes land in which slot, and when); this file owns
// the arithmetic, in two steps: gemv_stream_begin() decodes the task once per block and stages
// prologue(x) in shared memory; gemv_stream_chunk() then consumes one chunk of whole weight rows
// from a ring slot and writes those rows' outputs. Per-row sums are deterministic (fixed warp
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

/// Decode `inst` (once per block, into shared memory) and stage prologue(x) of its one row in
/// ctx.s_work. `*out` points at the block-shared plan. Whole block.
AMK_DEVICE int32_t gemv_stream_begin(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx,
                                     const GemvPlan** out) {
  GemvPlan* const s_plan = shared_args<GemvPlan>();
  AMK_TRY_DEV(decode_once(s_plan, [&](GemvPlan* o) { return decode_gemv_plan(p, inst, o); }));
  const GemvPlan& a = *s_plan;
  // The host admitted this task to the stream (gemv_stream_chunk_bytes); a plan that disagrees
  // with its table entry is caught by the kernel, these are the limits of this code itself.
  const int64_t cap = static_cast<int64_t>(ctx.work_floats) & ~int64_t{7};
  if (a.mm.m_end - a.mm.m_begin != 1 || a.mm.K > cap) return AMK_DEVERR_BAD_PARAMS;
  const int64_t r = a.mm.m_begin;
  const float scale = a.prologue == kGemvRmsNorm ? gemv_rms_scale(a.mm, r, a.eps, ctx) : 1.0f;
  gemv_stage_x(a.mm, a.prologue, a.aux, scale, r, 0, a.mm.K, ctx.s_work);
  __syncthreads();
  *out = s_plan;
  return AMK_DEVERR_NONE;
}

/// The per-(row, segment) partial sums of one chunk into s_part (see gemv_stream_chunk).
template <int DT>
AMK_DEVICE void gemv_stream_rows(const GemvPlan& a, const char* w, int32_t rows, float* s_part, const float* s_x) {
  constexpr int U = 4;
  constexpr int64_t kEpv = DT == AMK_DTYPE_F32 ? 4 : 8;
  const int64_t row_vecs = a.mm.K / kEpv;
  const int warps = gpu::warp_count();
  const int nseg = rows >= warps ? 1 : warps / rows;
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
AMK_DEVICE void gemv_stream_chunk(const GemvPlan& a, const char* w, int64_t n0, int32_t rows, float* s_part,
                                  const DeviceCtx& ctx) {
  const int32_t wdt = a.mm.w.dtype;
  if (wdt == AMK_DTYPE_BF16) gemv_stream_rows<AMK_DTYPE_BF16>(a, w, rows, s_part, ctx.s_work);
  else if (wdt == AMK_DTYPE_F16) gemv_stream_rows<AMK_DTYPE_F16>(a, w, rows, s_part, ctx.s_work);
  else gemv_stream_rows<AMK_DTYPE_F32>(a, w, rows, s_part, ctx.s_work);
  __syncthreads();  // the slot's bytes are read and the partial sums written
  const int warps = gpu::warp_count();
  const int nseg = rows >= warps ? 1 : warps / rows;
  const int64_t r = a.mm.m_begin;
  for (int t = static_cast<int>(threadIdx.x); t < rows; t += static_cast<int>(blockDim.x)) {
    float v = 0.0f;
    for (int s = 0; s < nseg; ++s) v += s_part[t * nseg + s];
    const int64_t n = n0 + t;
    const int64_t idx = r * a.mm.n_out + n;
    if (a.has_bias) v = v + a.bias.load(n);
    if (a.has_residual) v = v + a.residual.load(idx);
    a.mm.y.store(idx, v);
  }
}

}  // namespace amk::instructions
