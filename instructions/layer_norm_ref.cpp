// instructions/layer_norm_ref.cpp: CPU reference of LAYERNORM. Two passes (mean, then the sum of
// squared deviations) rather than E[x^2] - E[x]^2, which cancels badly when |mean| >> std.
#include <cmath>
#include <vector>

#include "instructions/common/matmul_ref.h"
#include "instructions/common/reduce.h"
#include "instructions/layer_norm.h"

namespace amk::instructions {

int32_t layer_norm_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  LayerNormArgs a;
  AMK_TRY_DEV(decode_layer_norm(prog, inst, &a));
  const size_t H = static_cast<size_t>(a.hidden);
  std::vector<float> xf(H), wf(H), bf(H, 0.0f);
  stage_row_f32(a.w, 0, a.hidden, wf.data());
  if (a.has_bias) stage_row_f32(a.b, 0, a.hidden, bf.data());
  const float n = static_cast<float>(a.hidden);
  for (int64_t r = 0; r < a.rows; ++r) {
    stage_row_f32(a.x, r, a.hidden, xf.data());
    const float mean = row_sum(xf.data(), a.hidden) / n;
    const float inv = 1.0f / std::sqrt(row_sum_sq(xf.data(), a.hidden, mean) / n + a.eps);
    for (int64_t h = 0; h < a.hidden; ++h) a.y.store(r * a.hidden + h, (xf[h] - mean) * inv * wf[h] + bf[h]);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
