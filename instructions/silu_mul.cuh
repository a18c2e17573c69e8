// instructions/silu_mul.cuh: SILU_MUL (9) on the device, elementwise: y = silu(gate) * up. Operands are decoded and
// checked by silu_mul.h (shared with the CPU reference); one fp32 value and one cast per element.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/silu_mul.h"

namespace amk::instructions {

/// SILU_MUL, whole block.
AMK_DEVICE_NOINLINE int32_t silu_mul_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  SiluMulArgs* const s_args = shared_args<SiluMulArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](SiluMulArgs* out) { return decode_silu_mul(p, inst, out); }));
  const SiluMulArgs& a = *s_args;
  block_for(a.y.numel, [&](int64_t i) { a.y.store(i, silu_mul(a.gate.load(i), a.up.load(i))); });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
