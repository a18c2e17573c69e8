// instructions/rope_ref.cpp: CPU reference of ROPE. The angle is the fp32 product pos * inv_freq,
// as Hugging Face computes it, so long positions round the same way the model was trained with.
#include <cmath>
#include <vector>

#include "instructions/rope.h"

namespace amk::instructions {

int32_t rope_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  RopeArgs a;
  AMK_TRY_DEV(decode_rope(prog, inst, &a));
  const int64_t half = a.head_dim / 2;
  std::vector<float> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
  const float pos = static_cast<float>(a.pos);
  for (int64_t i = 0; i < half; ++i) {
    const float ang = pos * a.inv_freq.load(i);
    c[static_cast<size_t>(i)] = std::cos(ang);
    s[static_cast<size_t>(i)] = std::sin(ang);
  }
  for (int64_t h = 0; h < a.heads; ++h) {
    const int64_t o = h * a.head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float x0 = a.x.load(o + i), x1 = a.x.load(o + i + half);  // both read before y is written
      const float ci = c[static_cast<size_t>(i)], si = s[static_cast<size_t>(i)];
      a.y.store(o + i, x0 * ci - x1 * si);
      a.y.store(o + i + half, x1 * ci + x0 * si);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
