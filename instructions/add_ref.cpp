// instructions/add_ref.cpp: CPU reference of ADD. Element i of both inputs is read before y[i]
// is written, so y may be either input.
#include "instructions/add.h"

namespace amk::instructions {

int32_t add_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  AddArgs a;
  AMK_TRY_DEV(decode_add(prog, inst, &a));
  for (int64_t i = 0; i < a.y.numel; ++i) a.y.store(i, a.a.load(i) + a.b.load(i));
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
