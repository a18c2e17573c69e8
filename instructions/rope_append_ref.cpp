// instructions/rope_append_ref.cpp: CPU reference of FUSED ROPE_APPEND. The same arithmetic as
// rope_ref (fp32 angle pos * inv_freq, std::cos / std::sin), stored straight into the cache row,
// so it equals ROPE into a scratch row followed by KV_APPEND bit for bit when the scratch row has
// the cache's dtype (the lowering it replaces rounds the rotated key to the activation dtype, which
// is the cache's).
#include <cmath>

#include "instructions/rope_append.h"

namespace amk::instructions {

int32_t rope_append_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  RopeAppendArgs a;
  AMK_TRY_DEV(decode_rope_append(prog, inst, &a));
  const float pos = static_cast<float>(a.pos);
  const int64_t base = a.pos * a.row;
  for (int64_t i = 0; i < a.half; ++i) {
    const float ang = pos * a.inv_freq.load(i);
    const float c = std::cos(ang), s = std::sin(ang);
    for (int64_t o = 0; o < a.row; o += a.head_dim) {
      const float x0 = a.x.load(o + i), x1 = a.x.load(o + i + a.half);
      a.cache.store(base + o + i, x0 * c - x1 * s);
      a.cache.store(base + o + i + a.half, x1 * c + x0 * s);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
