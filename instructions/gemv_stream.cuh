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

/// Partial sums one chunk may leave in shared memory: rows * nseg <= max(rows, r * warps).
inline constexpr int kStreamPartials =
    kStreamChunkMaxRows > kStreamRowsPerItem * gpu::kMaxWarps ? static_cast<int>(kStreamChunkMaxRows)
                                                               : kStreamRowsPerItem * gpu::kMaxWarps;

/// R rounded up to a power of two: how many lane groups warp_sum_rows spreads R totals over.
AMK_HD constexpr int warp_sum_rows_width(int r) { return r <= 1 ? 1 : r <= 2 ? 2 : r <= 4 ? 4 : 8; }

/// The totals of R per-lane values over the warp, in R - 1 + log2(lanes / P) shuffles instead of
/// R * log2(lanes) (P: R rounded up to a power of two): each butterfly step first halves the
/// values a lane carries (the upper half of the lanes keeps the upper half of them), then sums
/// the one left. Returns this lane's total; *row says which of the R it is (lanes 0, lanes / P,
/// 2 lanes / P, ... hold rows 0, 1, 2, ...; a row >= R is padding). Fixed order: deterministic.
template <int R>
AMK_DEVICE float warp_sum_rows(const float (&v)[R], int* row) {
  constexpr int P = warp_sum_rows_width(R);
  static_assert(R <= 8 && P <= gpu::kWarpSize, "a few rows per warp");
  float a[P];
#pragma unroll
  for (int i = 0; i < P; ++i) a[i] = i < R ? v[i] : 0.0f;
  const int lane = gpu::lane_id();
  int base = 0, off = gpu::kWarpSize / 2;
#pragma unroll
  for (int width = P; width > 1; width /= 2, off /= 2) {
    const bool upper = (lane & off) != 0;
#pragma unroll
    for (int i = 0; i < width / 2; ++i) {
      const float keep = upper ? a[i + width / 2] : a[i];
      const float send = upper ? a[i] : a[i + width / 2];
      a[i] = keep + gpu::shfl_xor(send, off);
    }
    if (upper) base += width / 2;
  }
  for (; off >= 1; off /= 2) a[0] += gpu::shfl_xor(a[0], off);
  *row = base;
  return a[0];
}

/// Where a streamed task's staged x lives: contiguous for F32 weights (a 16-byte weight vector
/// meets 4 consecutive floats), planar for BF16 / F16 (x_planar_at: vector v meets lo[v], hi[v]).
template <int DT>
struct StreamX {
  const float4* lo;
  const float4* hi;
  AMK_DEVICE StreamX(const float* s_x, int32_t row_vecs)
      : lo(reinterpret_cast<const float4*>(s_x)), hi(reinterpret_cast<const float4*>(s_x) + row_vecs) {}
  AMK_DEVICE void load(int32_t v, float (&xv)[DT == AMK_DTYPE_F32 ? 4 : 8]) const {
    const float4 a = lo[v];
    xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
    if constexpr (stream_x_planar(DT)) {
      const float4 b = hi[v];
      xv[4] = b.x, xv[5] = b.y, xv[6] = b.z, xv[7] = b.w;
    }
  }
};

/// One item: rows [g * R, g * R + R) (clamped to the chunk: duplicate reads, never written),
/// vectors [v0, v1) of each, against the staged x; every lane's share of the R dot products in
/// acc. 32-bit offsets throughout (a slot is a few hundred KiB at most): the 64-bit index
/// arithmetic of gemv_chunk_vec doubled the instructions of this issue-bound loop.
template <int DT, int R>
AMK_DEVICE void gemv_stream_item(const char* w, int32_t rows, int32_t row_vecs, int32_t g, int32_t v0, int32_t v1,
                                 const StreamX<DT>& x, float (&acc)[R]) {
  constexpr int kEpv = DT == AMK_DTYPE_F32 ? 4 : 8;
#ifdef AMK_STREAM_U  // A/B knob (docs/PERFORMANCE.md row 141): loads per row in flight per lane for R > 1
  constexpr int U = R == 1 ? 4 : AMK_STREAM_U;
#else
  constexpr int U = R == 1 ? 4 : 2;  // 16-byte loads per row in flight per lane
#endif  // AMK_STREAM_U
  const char* rowp[R];
  float odd[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int32_t row = g * R + i < rows ? g * R + i : rows - 1;
    rowp[i] = w + (row * row_vecs + v0) * 16;
    acc[i] = 0.0f;
    odd[i] = 0.0f;
  }
  const int32_t nvec = v1 - v0;
  for (int32_t i0 = gpu::lane_id(); i0 < nvec; i0 += gpu::kWarpSize * U) {
    uint4 wv[R][U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int32_t i = i0 + u * gpu::kWarpSize;
#pragma unroll
      for (int r = 0; r < R; ++r)
        wv[r][u] = i < nvec ? *reinterpret_cast<const uint4*>(rowp[r] + i * 16) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int32_t i = i0 + u * gpu::kWarpSize;
      if (i < nvec) {
        float xv[kEpv];
        x.load(v0 + i, xv);
#pragma unroll
        for (int r = 0; r < R; ++r) gemv_dot16_pair<DT>(wv[r][u], xv, acc[r], odd[r]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] += odd[i];
}

/// Every item of one chunk: s_part[row * sp.nseg + seg] = that row's segment sum (fixed warp
/// assignment and summation order: deterministic). `s_x` in StreamX's layout. Whole block, no
/// barrier.
template <int DT, int R>
AMK_DEVICE void gemv_stream_items(const char* w, int32_t row_vecs, const StreamSplit& sp, const float* s_x,
                                  float* s_part) {
  const StreamX<DT> x(s_x, row_vecs);
  const int items = sp.groups * sp.nseg;
  for (int it = gpu::warp_id(); it < items; it += compute_warps()) {
    // g = it / nseg by subtraction: a 32-bit division is ~25 dependent instructions around a
    // MUFU.RCP on every item, and nseg > 1 only where items <= warps (a few steps at most; the
    // measuring knobs' fixed splits may take more, still exact).
    int g = it, seg = 0;
    if (sp.nseg > 1)
      for (g = 0, seg = it; seg >= sp.nseg; seg -= sp.nseg) ++g;
    const int32_t v0 = seg * sp.seg_vecs;
    const int32_t v1 = v0 + sp.seg_vecs < row_vecs ? v0 + sp.seg_vecs : row_vecs;
    float acc[R];
    gemv_stream_item<DT, R>(w, sp.rows, row_vecs, g, v0, v1, x, acc);
    int i;
    const float total = warp_sum_rows<R>(acc, &i);
    constexpr int P = warp_sum_rows_width(R);
    if (gpu::lane_id() % (gpu::kWarpSize / P) == 0 && i < R && g * R + i < sp.rows) s_part[(g * R + i) * sp.nseg + seg] = total;
  }
}

/// gemv_stream_items for the split's row count per item (`sp` passed gemv_stream_split_ok).
template <int DT>
AMK_DEVICE void gemv_stream_partials(const char* w, int32_t row_vecs, const StreamSplit& sp, const float* s_x,
                                     float* s_part) {
  static_assert(kStreamRowsPerItem == 4, "one case per row count");
  if (sp.r == 4) gemv_stream_items<DT, 4>(w, row_vecs, sp, s_x, s_part);
  else if (sp.r == 3) gemv_stream_items<DT, 3>(w, row_vecs, sp, s_x, s_part);
  else if (sp.r == 2) gemv_stream_items<DT, 2>(w, row_vecs, sp, s_x, s_part);
  else gemv_stream_items<DT, 1>(w, row_vecs, sp, s_x, s_part);
}

/// Whether gemv_stream_begin takes stream_stage_x16 and stream_stage_rms_x32 where they apply
/// (-DAMK_NO_STAGE16: never, for A/B measurements of the generic loop).
#ifdef AMK_NO_STAGE16
inline constexpr bool kStageX16 = false;
#else
inline constexpr bool kStageX16 = true;
#endif  // AMK_NO_STAGE16

/// One staged vector of stream_stage_x16: raw x and aux (already loaded) -> prologue -> s_x.
template <int DT>
AMK_DEVICE void stream_stage_vec16(uint4 xr, uint4 ar, int32_t prologue, int64_t k, int64_t K, float* s_x, bool planar,
                                   float& ss) {
  float v[8], a[8];
  unpack16<DT>(xr, v);
  if (prologue != kGemvPlain) unpack16<DT>(ar, a);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (prologue == kGemvRmsNorm) {
      ss = fmaf(v[j], v[j], ss);
      v[j] *= a[j];
    } else if (prologue == kGemvSiluMul) {
      v[j] = silu_mul_fast(v[j], a[j]);
    }
  }
  store_x8(s_x, k, K, planar, v);
}

/// gemv_stream_begin's staging of RMSNORM over fp32 x with a 2-byte norm weight (AUXDT): the
/// residual h of a program with MLP folds (docs/FOLD.md), staged by its q / k / v, fold and LM-head
/// tasks. Two 16-byte loads of x and one of the weight per 8 elements, where the generic loop goes
/// through load8's dtype branches: a small loop of its own, because those tasks run once per layer
/// on an SM and fetch their code cold (docs/PERFORMANCE.md rows 202-203). A thread's rounds go two
/// at a time, as in stream_stage_x16; each thread sums x^2 in the generic loop's order, so the
/// result is the same bit for bit. Returns this thread's sum of x^2. Whole block, no barrier.
template <int AUXDT>
AMK_DEVICE float stream_stage_rms_x32(const float* x, const uint16_t* weight, int64_t K, float* s_x, bool planar) {
  float ss = 0.0f;
  const auto vec = [&](const float4& a, const float4& b, const uint4& wr, int64_t k) {
    float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}, g[8];
    unpack16<AUXDT>(wr, g);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      ss = fmaf(v[j], v[j], ss);
      v[j] *= g[j];
    }
    store_x8(s_x, k, K, planar, v);
  };
  const int64_t step = block_threads() * 8;
  int64_t k = block_tid() * 8;
  for (; k + step < K; k += 2 * step) {
    const float4 a0 = *reinterpret_cast<const float4*>(x + k), b0 = *reinterpret_cast<const float4*>(x + k + 4);
    const float4 a1 = *reinterpret_cast<const float4*>(x + k + step);
    const float4 b1 = *reinterpret_cast<const float4*>(x + k + step + 4);
    const uint4 w0 = *reinterpret_cast<const uint4*>(weight + k), w1 = *reinterpret_cast<const uint4*>(weight + k + step);
    vec(a0, b0, w0, k);
    vec(a1, b1, w1, k + step);
  }
  for (; k < K; k += step)
    vec(*reinterpret_cast<const float4*>(x + k), *reinterpret_cast<const float4*>(x + k + 4),
        *reinterpret_cast<const uint4*>(weight + k), k);
  return ss;
}

/// gemv_stream_begin's staging for 2-byte x and aux (DT, contiguous, 16-byte aligned rows) on
/// plain pointers: one 16-byte load of each per 8 elements, converted with unpack16, where the
/// generic loop goes through load8's dtype branches. H200, same call: 3.6% per token on the
/// Llama-1B shape, 2.4% on 8B (docs/PERFORMANCE.md, row 64). A thread's rounds go two at a time,
/// both rounds' loads issued before either is converted: one L2 round trip for the 8B's K-4096
/// rows instead of two, three for down's K 14336 instead of six; heads 0.13-0.45 us shorter, 8B
/// -0.3% (row 149; -DAMK_NO_STAGE_PAIRS for the A/B), ptxas unchanged. The same idea spilled
/// when the kernel had fewer registers (80 -> 176 B of spill stores for 2 rounds, 208 for 4).
/// Returns this thread's sum of x^2 (RMSNORM's statistic; unused otherwise). Whole block, no
/// barrier.
template <int DT>
AMK_DEVICE float stream_stage_x16(const uint16_t* x, const uint16_t* aux, int32_t prologue, int64_t K, float* s_x,
                                  bool planar) {
  float ss = 0.0f;
  const int64_t step = block_threads() * 8;
  int64_t k = block_tid() * 8;
#ifndef AMK_NO_STAGE_PAIRS
  for (; k + step < K; k += 2 * step) {
    const uint4 x0 = *reinterpret_cast<const uint4*>(x + k), x1 = *reinterpret_cast<const uint4*>(x + k + step);
    uint4 a0{}, a1{};
    if (prologue != kGemvPlain) {
      a0 = *reinterpret_cast<const uint4*>(aux + k);
      a1 = *reinterpret_cast<const uint4*>(aux + k + step);
    }
    stream_stage_vec16<DT>(x0, a0, prologue, k, K, s_x, planar, ss);
    stream_stage_vec16<DT>(x1, a1, prologue, k + step, K, s_x, planar, ss);
  }
#endif  // AMK_NO_STAGE_PAIRS
  for (; k < K; k += step) {
    const uint4 xr = *reinterpret_cast<const uint4*>(x + k);
    const uint4 ar = prologue != kGemvPlain ? *reinterpret_cast<const uint4*>(aux + k) : uint4{};
    stream_stage_vec16<DT>(xr, ar, prologue, k, K, s_x, planar, ss);
  }
  return ss;
}

/// Stage prologue(x) of the plan's one row in ctx.s_work (StreamX's layout: planar for 2-byte
/// weights) in a single pass over x, and return the
/// factor gemv_stream_chunk applies to each row's sum: for RMSNORM the staged values are x * norm_w
/// and the factor is 1 / rms(x), summed in the same pass (sum_k W[n,k] x[k] nw[k] / rms ==
/// the reference's sum_k W[n,k] (x[k] / rms) nw[k] up to fp32 rounding); 1 otherwise. `plan`
/// was decoded by the host (gemv_stream_chunk_bytes admitted it). Whole block; ends with a barrier.
AMK_DEVICE float gemv_stream_begin(const GemvPlan& a, const DeviceCtx& ctx) {
  const int64_t K = a.mm.K, r = a.mm.m_begin;
  const bool planar = stream_x_planar(a.mm.w.dtype);  // StreamX's layout
  float* const s_x = ctx.s_work;
  compute_barrier();  // the previous task's last reads of s_work are done
  const int32_t xdt = a.mm.x.dtype;
  if (kStageX16 && (xdt == AMK_DTYPE_BF16 || xdt == AMK_DTYPE_F16) && vec8_ok(a.mm.x, r * K, K) &&
      (a.prologue == kGemvPlain ||
       (a.aux.dtype == xdt && vec8_ok(a.aux, a.prologue == kGemvRmsNorm ? 0 : r * K, K)))) {
    const uint16_t* x = static_cast<const uint16_t*>(a.mm.x.ptr) + r * K;
    const uint16_t* aux = a.prologue == kGemvPlain ? nullptr
                          : static_cast<const uint16_t*>(a.aux.ptr) + (a.prologue == kGemvRmsNorm ? 0 : r * K);
    const float ss = xdt == AMK_DTYPE_BF16 ? stream_stage_x16<AMK_DTYPE_BF16>(x, aux, a.prologue, K, s_x, planar)
                                           : stream_stage_x16<AMK_DTYPE_F16>(x, aux, a.prologue, K, s_x, planar);
    AMK_PROBE(8, ctx);  // thread 0's share of x is staged (docs/PERFORMANCE.md row 147)
    if (a.prologue == kGemvRmsNorm) return rms_inv(compute_sum(ss, ctx.s_red), K, a.eps);  // its barriers publish s_x
    compute_barrier();
    return 1.0f;
  }
  if (a.prologue != kGemvRmsNorm) {
    gemv_stage_x(a.mm, a.prologue, a.aux, 1.0f, r, 0, K, s_x, planar);
    compute_barrier();
    return 1.0f;
  }
  float ss = 0.0f;
  const int32_t wdt = a.aux.dtype;
  if (kStageX16 && xdt == AMK_DTYPE_F32 && (wdt == AMK_DTYPE_BF16 || wdt == AMK_DTYPE_F16) && vec8_ok(a.mm.x, r * K, K) &&
      vec8_ok(a.aux, 0, K)) {
    const float* x = static_cast<const float*>(a.mm.x.ptr) + r * K;
    const auto* weight = static_cast<const uint16_t*>(a.aux.ptr);
    ss = wdt == AMK_DTYPE_BF16 ? stream_stage_rms_x32<AMK_DTYPE_BF16>(x, weight, K, s_x, planar)
                               : stream_stage_rms_x32<AMK_DTYPE_F16>(x, weight, K, s_x, planar);
  } else if (vec8_ok(a.mm.x, r * K, K) && vec8_ok(a.aux, 0, K)) {
    for (int64_t k = block_tid() * 8; k < K; k += block_threads() * 8) {
      float v[8], w[8];
      load8(a.mm.x, r * K + k, v);
      load8(a.aux, k, w);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        ss = fmaf(v[j], v[j], ss);
        v[j] *= w[j];
      }
      store_x8(s_x, k, K, planar, v);
    }
  } else {
    for (int64_t k = block_tid(); k < K; k += block_threads()) {
      const float v = a.mm.x.load(r * K + k);
      ss = fmaf(v, v, ss);
      s_x[planar ? x_planar_at(k, K) : k] = v * a.aux.load(k);
    }
  }
  return rms_inv(compute_sum(ss, ctx.s_red), K, a.eps);  // block_sum's barriers publish s_x
}

/// One chunk: output rows [n0, n0 + sp.rows) of the plan's tile, whose weights are `w` (shared
/// memory, the rows of K elements back to back). The warps take the split's items, whose segment
/// sums go to `s_part`; after the block barrier that also frees the slot, the row's owner thread
/// adds them in order and writes y (+ bias, + residual), whose addends it loaded before the items
/// (their global latency would otherwise hold up warp 0, and so the block, on every chunk).
/// A rotating plan's y is the fp32 scratch beside x (gemv_stream_rotate_after): this loop is the
/// same code for every task, rotating or not.
/// Whole block; `s_part` alternates between two buffers from chunk to chunk, so the next chunk's
/// writes never race this chunk's reads.
AMK_DEVICE void gemv_stream_chunk(const GemvPlan& a, const StreamSplit& sp, const char* w, int64_t n0, float scale,
                                  float* s_part, const DeviceCtx& ctx) {
  const int32_t wdt = a.mm.w.dtype;
  // K / 4 or K / 8 as a shift: a division by a value unknown at compile time is a subroutine,
  // on every chunk (K > 0, a multiple of the vector: gemv_stream_chunk_bytes admitted it).
  const int32_t row_vecs = static_cast<int32_t>(a.mm.K >> (wdt == AMK_DTYPE_F32 ? 2 : 3));
  const int64_t r = a.mm.m_begin;
  const int t = static_cast<int>(threadIdx.x);
  float bias = 0.0f, residual = 0.0f;
  if (t < sp.rows) {
    if (a.has_bias) bias = a.bias.load(n0 + t);
    if (a.has_residual) residual = a.residual.load(r * a.mm.n_out + n0 + t);
  }
  if (wdt == AMK_DTYPE_BF16) gemv_stream_partials<AMK_DTYPE_BF16>(w, row_vecs, sp, ctx.s_work, s_part);
  else if (wdt == AMK_DTYPE_F16) gemv_stream_partials<AMK_DTYPE_F16>(w, row_vecs, sp, ctx.s_work, s_part);
  else gemv_stream_partials<AMK_DTYPE_F32>(w, row_vecs, sp, ctx.s_work, s_part);
  compute_barrier();  // the slot's bytes are read and the partial sums written
  if (t < sp.rows) {  // rows <= kStreamChunkMaxRows < kComputeThreads: one row per thread
    static_assert(kStreamChunkMaxRows <= kComputeThreads, "one owner thread per row");
    float v = 0.0f;
    for (int s = 0; s < sp.nseg; ++s) v += s_part[t * sp.nseg + s];
    v *= scale;
    if (a.has_bias) v = v + bias;
    if (a.has_residual) v = v + residual;
    a.mm.y.store(r * a.mm.n_out + n0 + t, v);
    if (a.has_copy) a.copy.store(r * a.mm.n_out + n0 + t, v);
  }
}

#ifndef AMK_NO_STEP_STREAM  // only the kernels whose streamed tasks rotate (persistent_kernel.cu, kStepGemvStream)
/// The rope rotation of a streamed FUSED RMSNORM_GEMV_ROPE / _ROPE_APPEND tile, after its last
/// chunk (docs/ROPE_IN_GEMV.md). The host pointed the plan's mm.y at an fp32 scratch of the tile's
/// rows beside x in the work area and kept the real output in `copy` (has_copy stays false; the
/// loader binds the scratch and moves copy to the cache row: bind_streamed_step), so the chunk
/// loop stores each row's unrounded sum there as it stores any y. Each pair (2i, 2i + 1) is then
/// rotated in fp32 and rounded once into the output, as the CPU VM does. Out of line and after the
/// loop because the rotation in the chunk's epilogue, or a call to it from there, cost every
/// streamed task of the kernel ~1% per token (docs/PERFORMANCE.md rows 187-190). Whole block: its
/// barrier publishes the last chunk's sums; the kernel loop's release barrier follows it, and the
/// next task's gemv_stream_begin waits on a barrier before it overwrites the work area.
AMK_DEVICE_NOINLINE void gemv_stream_rotate_after(const GemvPlan& a, const DeviceCtx& ctx) {
  compute_barrier();  // every owner's sums are in the scratch
  const float* const s = ctx.s_work + a.mm.K;  // check_streamed: K + the tile's rows fit
  const int64_t out0 = a.mm.m_begin * a.mm.n_out + a.mm.n_begin;
  const auto pairs = static_cast<int32_t>((a.mm.n_end - a.mm.n_begin) / 2);
  for (int32_t i = static_cast<int32_t>(block_tid()); i < pairs; i += static_cast<int32_t>(block_threads())) {
    float lo = s[2 * i], hi = s[2 * i + 1];
    step_gemv_rotate(a.step, a.mm.n_begin + 2 * i, &lo, &hi);
    a.copy.store(out0 + 2 * i, lo);
    a.copy.store(out0 + 2 * i + 1, hi);
  }
}
#endif  // AMK_NO_STEP_STREAM

}  // namespace amk::instructions
