// instructions/nop.cuh: NOP (0) on the device: nothing (the kernel still waits and signals).
#pragma once
#include "instructions/device_common.cuh"
#include "instructions/nop.h"

namespace amk::instructions {

/// NOP, whole block.
AMK_DEVICE_NOINLINE int32_t nop_run(const amk_program_t&, const amk_instruction_t&, const DeviceCtx&) { return AMK_DEVERR_NONE; }

}  // namespace amk::instructions
