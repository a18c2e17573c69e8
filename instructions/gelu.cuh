// instructions/gelu.cuh: GELU (10) on the device, elementwise: y = 0.5 x (1 + erf(x / sqrt 2)). Operands are decoded and
// checked by gelu.h (shared with the CPU reference); one fp32 value and one cast per element.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/gelu.h"

namespace amk::instructions {

/// GELU, whole block.
AMK_DEVICE_NOINLINE int32_t gelu_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  GeluArgs* const s_args = shared_args<GeluArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](GeluArgs* out) { return decode_gelu(p, inst, out); }));
  const GeluArgs& a = *s_args;
  block_for(a.y.numel, [&](int64_t i) { a.y.store(i, gelu(a.x.load(i))); });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
