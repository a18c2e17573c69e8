// instructions/mul_ref.cpp: CPU reference of MUL (a * b, or a * scale with one input), elementwise;
// element i is read before y[i] is written, so y may alias an input.
#include "instructions/mul.h"

namespace amk::instructions {

int32_t mul_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  MulArgs a;
  AMK_TRY_DEV(decode_mul(prog, inst, &a));
  for (int64_t i = 0; i < a.y.numel; ++i) a.y.store(i, a.a.load(i) * (a.has_b ? a.b.load(i) : a.scale));
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
