// instructions/mlp_fold_ref.cpp: CPU reference of FUSED RMSNORM_MLP_FOLD (instructions/mlp_fold.h).
// The task's partial sums for all K outputs are formed in fp32 first, in column order, and only
// then added into out, one atomic add per element: several workers run fold tasks of one stage at
// once, and an add must never be lost between a load and a store of another worker.
#include <cmath>
#include <vector>

#include "instructions/common/matmul_ref.h"
#include "instructions/common/reduce.h"
#include "instructions/mlp_fold.h"
#include "instructions/rms_norm.h"
#include "instructions/silu_mul.h"

namespace amk::instructions {
namespace {

/// *p += v, atomically (a compare-and-swap loop: C++17 has no atomic float add).
void atomic_add_f32(float* p, float v) {
  float seen;
  __atomic_load(p, &seen, __ATOMIC_RELAXED);
  for (;;) {
    float want = seen + v;
    if (__atomic_compare_exchange(p, &seen, &want, /*weak=*/true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}

}  // namespace

int32_t mlp_fold_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  MlpFoldArgs a;
  AMK_TRY_DEV(decode_mlp_fold(prog, inst, &a));
  const int64_t K = a.K;
  std::vector<float> xf(static_cast<size_t>(K)), nw(static_cast<size_t>(K)), sum(static_cast<size_t>(K));
  std::vector<float> down(static_cast<size_t>(K));
  float gu[2];
  stage_row_f32(a.norm_w, 0, K, nw.data());
  // W viewed as [3 * inter, K]: row 3n is gate's row n, 3n + 1 up's, 3n + 2 down_proj's column n.
  Tensor w_rows = a.w;
  w_rows.rank = 2;
  w_rows.shape[0] = 3 * a.inter;
  w_rows.shape[1] = K;
  w_rows.stride[0] = K;
  w_rows.stride[1] = 1;
  for (int64_t r = 0; r < a.rows; ++r) {
    stage_row_f32(a.x, r, K, xf.data());
    const float inv = rms_inv(row_sum_sq(xf.data(), K, 0.0f), K, a.eps);
    for (int64_t k = 0; k < K; ++k) xf[k] = xf[k] * inv * nw[k];
    for (int64_t k = 0; k < K; ++k) sum[k] = 0.0f;
    for (int64_t n = a.n_begin; n < a.n_end; ++n) {
      matmul_row_dots(xf.data(), w_rows, K, 3 * n, 3 * n + 2, gu);
      const float act = silu_mul(gu[0], gu[1]);
      stage_row_f32(w_rows, 3 * n + 2, K, down.data());
      for (int64_t k = 0; k < K; ++k) sum[k] = fmaf(act, down[k], sum[k]);
    }
    float* out = static_cast<float*>(a.out.ptr) + r * K;
    for (int64_t k = 0; k < K; ++k) atomic_add_f32(out + k, sum[k]);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
