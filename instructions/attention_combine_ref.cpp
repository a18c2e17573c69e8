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
  std::vector<float> acc(static_cast<size_t>(hd));
  float w[AMK_MAX_INPUTS];
  for (int64_t h = a.h_begin; h < a.h_end; ++h) {
    const int64_t o = h * width;
    float big_m = neg_inf;
    for (int32_t p = 0; p < a.k; ++p) big_m = std::fmax(big_m, a.parts[p].load(o + hd));
    float l = 0.0f;
    for (int32_t p = 0; p < a.k; ++p) {
      const float mp = a.parts[p].load(o + hd);
      w[p] = mp == neg_inf ? 0.0f : std::exp(mp - big_m);
      l += w[p] * a.parts[p].load(o + hd + 1);
    }
    for (int64_t d = 0; d < hd; ++d) {
      float s = 0.0f;
      for (int32_t p = 0; p < a.k; ++p)
        if (w[p] != 0.0f) s += w[p] * a.parts[p].load(o + d);
      acc[static_cast<size_t>(d)] = s;
    }
    for (int64_t d = 0; d < hd; ++d) a.y.store(h * hd + d, l > 0.0f ? acc[static_cast<size_t>(d)] / l : 0.0f);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
