// instructions/nop.h: NOP (0) does nothing; it exists so a schedule can hold a place in a queue
// (e.g. a pure synchronisation point). It reads and writes no buffer.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// NOP has no operands.
struct NopArgs {};

/// Always succeeds: NOP ignores its operands and params.
AMK_HD int32_t decode_nop(const amk_program_t&, const amk_instruction_t&, NopArgs*) { return AMK_DEVERR_NONE; }

/// CPU reference of NOP.
int32_t nop_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
