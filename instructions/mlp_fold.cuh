// instructions/mlp_fold.cuh: FUSED RMSNORM_MLP_FOLD on the device, the plain path: x normalised
// into shared memory, one warp per intermediate column for the gate and up dots, then every
// thread sums a[n] * down^T[n] for its outputs over the tile and adds the sum into out with one
// atomic add per element. Correct on any GPU (CUDA and HIP); the weight stream's fold (the speed
// path, docs/FOLD.md) is separate.
#pragma once
#include "instructions/device_common.cuh"
#include "instructions/mlp_fold.h"
#include "instructions/rms_norm.h"
#include "instructions/silu_mul.h"

namespace amk::instructions {

#ifdef AMK_FOLD_STREAM_LINK
/// A fold whose weights ride the kernel's weight stream (its blob is the GemvPlan the host
/// decoded for it): defined by the translation unit that defines AMK_FOLD_STREAM_LINK
/// (vm/cuda/persistent_kernel.cu), which owns the ring and finds it, and the task's place on it,
/// from ctx's shared-memory pointers. Reached through fused_run's call: a call site of its own
/// in the kernel loop, or ring fields in DeviceCtx, moved ptxas's allocation of the whole kernel
/// (docs/PERFORMANCE.md rows 138-139).
/// Internal linkage: the default and the fold kernel's translation units both define it in
/// builds whose flags define AMK_FOLD_STREAM (the A/B of docs/PERFORMANCE.md row 160).
static __device__ __noinline__ int32_t mlp_fold_streamed(const DeviceCtx& ctx);  // CUDA only
#endif  // AMK_FOLD_STREAM_LINK

/// RMSNORM_MLP_FOLD, whole block. BAD_PARAMS when x and the tile's activations do not fit the
/// work area (K + N_tile floats; the CUDA executor sizes it so where shared memory allows). A
/// version that took the tile in blocks of 32 columns needed less, but moved ptxas's allocation
/// of the persistent kernel (spill stores 60 -> 144 B), which every task would have paid for.
AMK_DEVICE_NOINLINE int32_t mlp_fold_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
#ifdef AMK_FOLD_STREAM_LINK
  if (ctx.blob != nullptr && ctx.blob->tag == TaskBlobTag<GemvPlan>::value) return mlp_fold_streamed(ctx);
#endif  // AMK_FOLD_STREAM_LINK
  MlpFoldArgs* const s_args = shared_args<MlpFoldArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](MlpFoldArgs* out) { return decode_mlp_fold(p, inst, out); }));
  const MlpFoldArgs& a = *s_args;
  const int64_t K = a.K, tile = a.n_end - a.n_begin;
  if (K + tile > static_cast<int64_t>(ctx.work_floats)) return AMK_DEVERR_BAD_PARAMS;
  float* const s_x = ctx.s_work;       // [K]: rmsnorm(x[r]) * norm_w
  float* const s_act = ctx.s_work + K;  // [tile]: silu(g) * u
  float* const out = static_cast<float*>(a.out.ptr);
  for (int64_t r = 0; r < a.rows; ++r) {
    compute_barrier();  // the previous row's (or task's) reads of the work area are done
    float ss = 0.0f;
    for (int64_t k = block_tid(); k < K; k += block_threads()) {
      const float v = a.x.load(r * K + k);
      s_x[k] = v;
      ss = fmaf(v, v, ss);
    }
    const float inv = rms_inv(compute_sum(ss, ctx.s_red), K, a.eps);  // its barriers publish s_x
    for (int64_t k = block_tid(); k < K; k += block_threads()) s_x[k] = s_x[k] * inv * a.norm_w.load(k);
    compute_barrier();
    for (int64_t j = gpu::warp_id(); j < tile; j += compute_warps()) {
      const int64_t gate_row = 3 * (a.n_begin + j) * K, up_row = gate_row + K;
      float g = 0.0f, u = 0.0f;
      for (int64_t k = gpu::lane_id(); k < K; k += gpu::kWarpSize) {
        g = fmaf(a.w.load(gate_row + k), s_x[k], g);
        u = fmaf(a.w.load(up_row + k), s_x[k], u);
      }
      g = gpu::warp_sum(g);
      u = gpu::warp_sum(u);
      if (gpu::lane_id() == 0) s_act[j] = silu_mul(g, u);
    }
    compute_barrier();
    for (int64_t k = block_tid(); k < K; k += block_threads()) {
      float sum = 0.0f;
      for (int64_t j = 0; j < tile; ++j) sum = fmaf(s_act[j], a.w.load((3 * (a.n_begin + j) + 2) * K + k), sum);
      atomicAdd(out + r * K + k, sum);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
