// instructions/mlp_fold_stream.cuh: the arithmetic of a RMSNORM_MLP_FOLD task on the GPU weight
// stream (docs/FOLD.md). The kernel owns the ring (vm/cuda/persistent_kernel.cu, run_fold_streamed);
// this file consumes one chunk of whole triples (gate row, up row, down^T row of one intermediate
// column) in two phases: the warps take the gate and up dots against the staged rmsnorm(x) * norm_w
// (gemv_stream_item's loop, two rows at a time), a barrier, each triple's activation
// a = silu(g) * u into shared memory, a barrier, then every compute thread adds a * down^T[n] for
// its own output vectors into registers, which the task adds into the F32 output at its end.
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

/// Phase 1 of a chunk: s_part[(2 j + i) * sp.nseg + seg] = the segment sum of triple j's gate
/// (i = 0) or up (i = 1) row. Whole block, no barrier.
template <int DT>
AMK_DEVICE void fold_gate_up_items(const char* w, int32_t row_vecs, const StreamSplit& sp, const float* s_x,
                                   float* s_part) {
  const StreamX<DT> x(s_x, row_vecs);
  const int items = sp.groups * sp.nseg;
  for (int it = gpu::warp_id(); it < items; it += compute_warps()) {
    const int j = sp.nseg == 1 ? it : it / sp.nseg;
    const int seg = it - j * sp.nseg;
    const int32_t v0 = seg * sp.seg_vecs;
    const int32_t v1 = v0 + sp.seg_vecs < row_vecs ? v0 + sp.seg_vecs : row_vecs;
    float acc[2];
    gemv_stream_item<DT, 2>(w + static_cast<int64_t>(3 * j) * row_vecs * 16, 2, row_vecs, 0, v0, v1, x, acc);
    int i;
    const float total = warp_sum_rows<2>(acc, &i);
    if (gpu::lane_id() % (gpu::kWarpSize / 2) == 0 && i < 2) s_part[(2 * j + i) * sp.nseg + seg] = total;
  }
}

/// Phase 3 of a chunk: sums += a[j] * down^T row of triple j, for this thread's output vectors
/// (t, t + threads, ...). No barrier.
template <int DT>
AMK_DEVICE void fold_down_rows(const char* w, int32_t row_vecs, int32_t triples, const float* s_act, FoldSums& sums) {
  constexpr int E = kFoldEpv<DT>;
#pragma unroll
  for (int q = 0; q < static_cast<int>(kFoldVecsPerThread); ++q) {
    const int32_t v = static_cast<int32_t>(threadIdx.x) + q * kComputeThreads;
    if (v >= row_vecs) continue;
    const char* col = w + (static_cast<int64_t>(2) * row_vecs + v) * 16;  // triple 0's down^T row
#pragma unroll 4
    for (int32_t j = 0; j < triples; ++j) {
      const uint4 wv = *reinterpret_cast<const uint4*>(col + static_cast<int64_t>(3 * j) * row_vecs * 16);
      float f[E];
      unpack16<DT>(wv, f);
      const float a = s_act[j];
#pragma unroll
      for (int e = 0; e < E; ++e) sums.v[q][e] = fmaf(a, f[e], sums.v[q][e]);
    }
  }
}

/// One chunk of `sp.rows` triples at `w` (shared memory). `scale` is gemv_stream_begin's 1 / rms.
/// Whole block: two barriers; every thread's reads of the slot are done when it returns (its own
/// down^T loads last), so each may release the slot at once.
template <int DT>
AMK_DEVICE void fold_stream_chunk(const char* w, int32_t row_vecs, const StreamSplit& sp, float scale,
                                  const float* s_x, float* s_act, float* s_part, FoldSums& sums) {
  fold_gate_up_items<DT>(w, row_vecs, sp, s_x, s_part);
  compute_barrier();  // the partial sums are written
  const int t = static_cast<int>(threadIdx.x);
  if (t < sp.rows) {
    float g = 0.0f, u = 0.0f;
    for (int s = 0; s < sp.nseg; ++s) {
      g += s_part[(2 * t) * sp.nseg + s];
      u += s_part[(2 * t + 1) * sp.nseg + s];
    }
    s_act[t] = silu_mul(g * scale, u * scale);
  }
  compute_barrier();  // the activations are written
  fold_down_rows<DT>(w, row_vecs, sp.rows, s_act, sums);
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
