// instructions/add.cuh: ADD (11) on the device, elementwise: y = a + b. Operands are decoded and
// checked by add.h (shared with the CPU reference); one fp32 value and one cast per element.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/add.h"

namespace amk::instructions {

/// ADD, whole block.
AMK_DEVICE_NOINLINE int32_t add_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AddArgs* const s_args = shared_args<AddArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](AddArgs* out) { return decode_add(p, inst, out); }));
  const AddArgs& a = *s_args;
  block_for(a.y.numel, [&](int64_t i) { a.y.store(i, a.a.load(i) + a.b.load(i)); });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
