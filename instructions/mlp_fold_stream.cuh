// instructions/mlp_fold_stream.cuh: the arithmetic of a RMSNORM_MLP_FOLD task on the GPU weight
// stream (docs/FOLD.md). The kernel owns the ring (vm/cuda/persistent_kernel.cu, mlp_fold_streamed);
// this file consumes one chunk of the task's rows: the stacked weight interleaves, per
// intermediate column j, a gate row (task row 3j), an up row (3j + 1) and a down^T row (3j + 2),
// and a chunk holds whole rows, so a column's three rows may span two or three chunks. Per chunk:
// the warps take the dots of its gate and up rows against the staged rmsnorm(x) * norm_w
// (gemv_stream_item's loop, a column's gate and up rows together where both are in the chunk), a
// barrier, each column's activation a = silu(g) * u into shared memory (or, when its up row comes
// in the next chunk, the gate's dot, carried there), a barrier, then every compute thread adds
// a * down^T for the chunk's down rows and its own output vectors into registers, which the task
// adds into the F32 output at its end.
#pragma once
#include "instructions/gemv_stream.cuh"
#include "instructions/silu_mul.h"

namespace amk::instructions {

/// Elements per 16-byte weight vector.
template <int DT>
inline constexpr int kFoldEpv = DT == AMK_DTYPE_F32 ? 4 : 8;

/// The per-thread sums of a streamed fold: kFoldVecsPerThread output vectors of 8 floats.
struct FoldSums {
  float v[kFoldVecsPerThread][8];
};

/// Phase 1 of the chunk of task rows [r0, r1) at `w` (shared memory): for each of its `pieces`
/// columns jf + q, s_part[(2 q + i) * sp.nseg + seg] = the segment sum of the column's gate
/// (i = 0) or up (i = 1) row, for those of the two rows the chunk holds. Whole block, no barrier.
template <int DT>
AMK_DEVICE void fold_gate_up_items(const char* w, int32_t row_vecs, int32_t r0, int32_t r1, int32_t jf, int32_t pieces,
                                   const StreamSplit& sp, const float* s_x, float* s_part) {
  const StreamX<DT> x(s_x, row_vecs);
  const int items = pieces * sp.nseg;
  for (int it = gpu::warp_id(); it < items; it += compute_warps()) {
    const int q = sp.nseg == 1 ? it : it / sp.nseg;
    const int seg = it - q * sp.nseg;
    const int32_t gate = 3 * (jf + q);
    const int32_t first = gate >= r0 ? gate : r0;  // the up row alone: its gate came in the chunk before
    const int32_t count = (gate + 1 < r1 ? gate + 1 : r1 - 1) - first + 1;  // 1 or 2 rows
    const int32_t v0 = seg * sp.seg_vecs;
    const int32_t v1 = v0 + sp.seg_vecs < row_vecs ? v0 + sp.seg_vecs : row_vecs;
    float acc[2];
    gemv_stream_item<DT, 2>(w + static_cast<int64_t>(first - r0) * row_vecs * 16, count, row_vecs, 0, v0, v1, x, acc);
    int i;
    const float total = warp_sum_rows<2>(acc, &i);
    if (gpu::lane_id() % (gpu::kWarpSize / 2) == 0 && i < count)
      s_part[(2 * q + (first - gate) + i) * sp.nseg + seg] = total;
  }
}

/// Phase 3 of the chunk of task rows [r0, r1) at `w`: sums += a[j] * down^T row of column j, for
/// the chunk's down rows (3j + 2) and this thread's output vectors (t, t + threads, ...). `s_act`
/// holds the task's activations by column. No barrier.
template <int DT>
AMK_DEVICE void fold_down_rows(const char* w, int32_t row_vecs, int32_t r0, int32_t r1, const float* s_act,
                               FoldSums& sums) {
  constexpr int E = kFoldEpv<DT>;
  const int32_t d0 = 3 * (r0 / 3) + 2;  // the first down row at or after r0
  const int32_t downs = d0 < r1 ? (r1 - 1 - d0) / 3 + 1 : 0;
  const float* const act = s_act + d0 / 3;
#pragma unroll
  for (int q = 0; q < static_cast<int>(kFoldVecsPerThread); ++q) {
    const int32_t v = static_cast<int32_t>(threadIdx.x) + q * kComputeThreads;
    if (v >= row_vecs) continue;
    const char* col = w + (static_cast<int64_t>(d0 - r0) * row_vecs + v) * 16;
#pragma unroll 4
    for (int32_t i = 0; i < downs; ++i) {
      const uint4 wv = *reinterpret_cast<const uint4*>(col + static_cast<int64_t>(3 * i) * row_vecs * 16);
      float f[E];
      unpack16<DT>(wv, f);
      const float a = act[i];
#pragma unroll
      for (int e = 0; e < E; ++e) sums.v[q][e] = fmaf(a, f[e], sums.v[q][e]);
    }
  }
}

/// -DAMK_FOLD_CHUNK_PROBE=N (measurement only): in a traced launch, thread 0 stamps the chunk's
/// t_ready after the chunk's first (N = 1) or second (N = 2) barrier instead of when its bytes
/// landed, so chunk_timeline.py's `math` is what follows that barrier. Three builds split a
/// chunk's arithmetic into the gate / up dots, the activations and the down^T rows.
#ifdef AMK_FOLD_CHUNK_PROBE
inline constexpr int kFoldChunkProbe = AMK_FOLD_CHUNK_PROBE;
#else
inline constexpr int kFoldChunkProbe = 0;
#endif  // AMK_FOLD_CHUNK_PROBE
static_assert(kFoldChunkProbe >= 0 && kFoldChunkProbe <= 2, "AMK_FOLD_CHUNK_PROBE is 1 or 2 (a barrier)");

/// One chunk: task rows [r0, r1) at `w` (shared memory). `scale` is gemv_stream_begin's 1 / rms;
/// `s_act` the task's activations by column (a column's gate dot waits there while its up row is
/// still to come). `probe`: kFoldChunkProbe's stamp (thread 0 in a traced launch; else null).
/// `w`, `s_x`, `s_act` and `s_part` should be known to the compiler as shared memory (the caller's
/// gpu::assume_shared on their bases), or every access through them is a generic one.
/// Whole block: two barriers; every thread's reads of the slot are done when it returns (its own
/// down^T loads last), so each may release the slot at once.
template <int DT>
AMK_DEVICE void fold_stream_chunk(const char* w, int32_t row_vecs, int32_t r0, int32_t r1, const StreamSplit& sp,
                                  float scale, const float* s_x, float* s_act, float* s_part, FoldSums& sums,
                                  uint64_t* probe) {
  int32_t jf;
  const int32_t pieces = fold_chunk_pieces(r0, r1, &jf);
  fold_gate_up_items<DT>(w, row_vecs, r0, r1, jf, pieces, sp, s_x, s_part);
  compute_barrier();  // the partial sums are written
  if constexpr (kFoldChunkProbe == 1) {
    if (probe != nullptr) *probe = gpu::global_timer_ns();
  }
  const int t = static_cast<int>(threadIdx.x);
  if (t < pieces) {
    const int32_t j = jf + t, gate = 3 * j;
    float g = 0.0f;
    if (gate >= r0) {
      for (int s = 0; s < sp.nseg; ++s) g += s_part[(2 * t) * sp.nseg + s];
    } else {
      g = s_act[j];  // carried from the chunk before
    }
    if (gate + 1 < r1) {
      float u = 0.0f;
      for (int s = 0; s < sp.nseg; ++s) u += s_part[(2 * t + 1) * sp.nseg + s];
      s_act[j] = silu_mul(g * scale, u * scale);  // silu_mul_fast: no gain (row 162)
    } else {
      s_act[j] = g;  // the up row comes in the next chunk
    }
  }
  compute_barrier();  // the activations are written
  if constexpr (kFoldChunkProbe == 2) {
    if (probe != nullptr) *probe = gpu::global_timer_ns();
  }
  fold_down_rows<DT>(w, row_vecs, r0, r1, s_act, sums);
}

/// The task's end: out[v * E .. v * E + E) += this thread's sums, four floats per atomic add
/// (red.global.add.v4.f32 on sm_90; `out` is 16-byte aligned, fold_stream_chunk_bytes).
template <int DT>
AMK_DEVICE void fold_add_sums(float* out, int32_t row_vecs, const FoldSums& sums) {
  constexpr int E = kFoldEpv<DT>;
#pragma unroll
  for (int q = 0; q < static_cast<int>(kFoldVecsPerThread); ++q) {
    const int32_t v = static_cast<int32_t>(threadIdx.x) + q * kComputeThreads;
    if (v >= row_vecs) continue;
#pragma unroll
    for (int e = 0; e < E; e += 4) {
      float* p = out + static_cast<int64_t>(v) * E + e;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(sums.v[q][e]),
                   "f"(sums.v[q][e + 1]), "f"(sums.v[q][e + 2]), "f"(sums.v[q][e + 3])
                   : "memory");
#else
      for (int i = 0; i < 4; ++i) atomicAdd(p + i, sums.v[q][e + i]);
#endif
    }
  }
}

}  // namespace amk::instructions
