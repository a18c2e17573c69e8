// instructions/softmax_ref.cpp: CPU reference of SOFTMAX. The row is staged in fp32, exponentiated
// in place after subtracting its max, then normalised by the fp32 sum.
#include <cmath>
#include <limits>
#include <vector>

#include "instructions/common/matmul_ref.h"
#include "instructions/common/reduce.h"
#include "instructions/softmax.h"

namespace amk::instructions {

int32_t softmax_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  SoftmaxArgs a;
  AMK_TRY_DEV(decode_softmax(prog, inst, &a));
  std::vector<float> e(static_cast<size_t>(a.cols));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < a.rows; ++r) {
    stage_row_f32(a.x, r, a.cols, e.data());
    float m = neg_inf;
    for (float v : e) m = v > m ? v : m;  // a NaN never becomes the max; it still poisons the sum
    if (m == neg_inf) {
      for (int64_t c = 0; c < a.cols; ++c) a.y.store(r * a.cols + c, 0.0f);
      continue;
    }
    for (float& v : e) v = std::exp(v - m);
    const float total = row_sum(e.data(), a.cols);
    for (int64_t c = 0; c < a.cols; ++c) a.y.store(r * a.cols + c, e[static_cast<size_t>(c)] / total);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
