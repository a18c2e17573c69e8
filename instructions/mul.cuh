// instructions/mul.cuh: MUL (12) on the device, elementwise: y = a * b, or a * scale. Operands are decoded and
// checked by mul.h (shared with the CPU reference); one fp32 value and one cast per element.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/mul.h"

namespace amk::instructions {

/// MUL, whole block.
AMK_DEVICE_NOINLINE int32_t mul_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  MulArgs* const s_args = shared_args<MulArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](MulArgs* out) { return decode_mul(p, inst, out); }));
  const MulArgs& a = *s_args;
  block_for(a.y.numel, [&](int64_t i) { a.y.store(i, a.a.load(i) * (a.has_b ? a.b.load(i) : a.scale)); });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
