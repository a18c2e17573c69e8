// instructions/attention_combine_ref.cpp: CPU reference of ATTENTION_COMBINE. w_p is set to 0 for
// an empty partial explicitly: exp(-inf - M) is 0 anyway unless M is -inf too, where it is NaN.
#include <cmath>
#include <limits>
#include <vector>

#include "instructions/attention_combine.h"

namespace amk::instructions {

int32_t attention_combine_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  AttentionCombineArgs a;
  AMK_TRY_DEV(decode_attention_combine(prog, inst, &a));
  const int64_t hd = a.head_dim, width = hd + 2;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int32_t n = a.k * a.rows;  // partial j: row j / k of operand j % k
  const int64_t row = a.parts[0].numel / a.rows;
  const auto load = [&](int32_t j, int64_t i) { return a.parts[j % a.k].load((j / a.k) * row + i); };
  std::vector<float> acc(static_cast<size_t>(hd));
  float w[kMaxCombinePartials];
  for (int64_t h = a.h_begin; h < a.h_end; ++h) {
    const int64_t o = h * width;
    float big_m = neg_inf;
    for (int32_t j = 0; j < n; ++j) big_m = std::fmax(big_m, load(j, o + hd));
    // Each row's sums in operand order, then the rows' sums in row order: the device's grouping
    // (one lane per row, attention_combine_f32).
    float l = 0.0f;
    for (int32_t r = 0; r < a.rows; ++r) {
      float lr = 0.0f;
      for (int32_t j = r * a.k; j < (r + 1) * a.k; ++j) {
        const float mj = load(j, o + hd);
        w[j] = mj == neg_inf ? 0.0f : std::exp(mj - big_m);
        lr += w[j] * load(j, o + hd + 1);
      }
      l += lr;
    }
    for (int64_t d = 0; d < hd; ++d) {
      float s = 0.0f;
      for (int32_t r = 0; r < a.rows; ++r) {
        float sr = 0.0f;
        for (int32_t j = r * a.k; j < (r + 1) * a.k; ++j)
          if (w[j] != 0.0f) sr += w[j] * load(j, o + d);
        s += sr;
      }
      acc[static_cast<size_t>(d)] = s;
    }
    for (int64_t d = 0; d < hd; ++d) a.y.store(h * hd + d, l > 0.0f ? acc[static_cast<size_t>(d)] / l : 0.0f);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
