// instructions/nop_ref.cpp: CPU reference of NOP. It only decodes (which always succeeds), so a
// NOP never reports an error whatever operands it carries.
#include "instructions/nop.h"

namespace amk::instructions {

int32_t nop_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  NopArgs a;
  return decode_nop(prog, inst, &a);
}

}  // namespace amk::instructions
