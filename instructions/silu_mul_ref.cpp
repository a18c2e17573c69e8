// instructions/silu_mul_ref.cpp: CPU reference of SILU_MUL, elementwise through silu_mul() from
// silu_mul.h; element i is read before y[i] is written, so y may alias gate or up.
#include "instructions/silu_mul.h"

namespace amk::instructions {

int32_t silu_mul_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  SiluMulArgs a;
  AMK_TRY_DEV(decode_silu_mul(prog, inst, &a));
  for (int64_t i = 0; i < a.y.numel; ++i) a.y.store(i, silu_mul(a.gate.load(i), a.up.load(i)));
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
