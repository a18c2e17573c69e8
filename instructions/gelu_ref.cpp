// instructions/gelu_ref.cpp: CPU reference of GELU, elementwise through gelu() from gelu.h so the
// device kernel evaluates the very same expression.
#include "instructions/gelu.h"

namespace amk::instructions {

int32_t gelu_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  GeluArgs a;
  AMK_TRY_DEV(decode_gelu(prog, inst, &a));
  for (int64_t i = 0; i < a.y.numel; ++i) a.y.store(i, gelu(a.x.load(i)));
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
