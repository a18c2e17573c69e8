// instructions/cpu_dispatch.h: the CPU reference entry point: run one instruction of a resolved
// program on the host. Every opcode decodes and checks its operands against the buffers' numel and
// shape before touching memory, so a bad instruction returns an error code instead of crashing.
#pragma once
#include <stdint.h>

#include "vm/abi.h"

namespace amk::instructions {

/// Execute `inst` over `prog` (prog.step may be null: position 0). Returns AMK_DEVERR_NONE or an
/// amk_device_error_t code: UNKNOWN_OPCODE, BAD_PARAMS, BAD_DTYPE or INDEX_OUT_OF_RANGE.
int32_t cpu_execute(const amk_program_t& prog, const amk_instruction_t& inst);

/// "NONE", "UNKNOWN_OPCODE", ... for an amk_device_error_t code; "UNKNOWN_ERROR" otherwise.
const char* device_error_name(int32_t code);

}  // namespace amk::instructions
