// instructions/rms_norm_ref.cpp: CPU reference of RMSNORM. Each row is staged in fp32 before any
// output is written, which is what makes y == x safe.
#include <vector>

#include "instructions/common/matmul_ref.h"
#include "instructions/common/reduce.h"
#include "instructions/rms_norm.h"

namespace amk::instructions {

int32_t rms_norm_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  RmsNormArgs a;
  AMK_TRY_DEV(decode_rms_norm(prog, inst, &a));
  std::vector<float> xf(static_cast<size_t>(a.hidden)), wf(static_cast<size_t>(a.hidden));
  stage_row_f32(a.w, 0, a.hidden, wf.data());
  for (int64_t r = 0; r < a.rows; ++r) {
    stage_row_f32(a.x, r, a.hidden, xf.data());
    const float inv = rms_inv(row_sum_sq(xf.data(), a.hidden, 0.0f), a.hidden, a.eps);
    for (int64_t h = 0; h < a.hidden; ++h) a.y.store(r * a.hidden + h, xf[h] * inv * wf[h]);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
