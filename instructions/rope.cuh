// instructions/rope.cuh: ROPE (8) on the device, rotate-half per head. One thread owns a pair
// (i, i + hd/2) of one head and reads both before writing both, so y may be x. cosf / sinf are the
// accurate (not fast-math) versions; they may differ from the host libm by an ulp.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/rope.h"
#include "instructions/rope_bf16.cuh"

namespace amk::instructions {

/// ROPE, whole block.
AMK_DEVICE_NOINLINE int32_t rope_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  RopeArgs* const s_args = shared_args<RopeArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(
      s_args, ctx, [&](RopeArgs* out) { return decode_rope(p, inst, out); },
      [&](RopeArgs* out) { return bind_rope_step(p, inst, out); }));
  const RopeArgs& a = *s_args;
  const int64_t half = a.head_dim / 2;
  const float pos = static_cast<float>(a.pos);
  if (rope_bf16_try(a.x, a.inv_freq, a.y, 0, a.head_dim, pos)) return AMK_DEVERR_NONE;
  block_for(a.heads * half, [&](int64_t e) {
    const int64_t h = e / half, i = e - h * half, o = h * a.head_dim;
    const float ang = pos * a.inv_freq.load(i);
    const float c = cosf(ang), s = sinf(ang);
    const float x0 = a.x.load(o + i), x1 = a.x.load(o + i + half);
    a.y.store(o + i, x0 * c - x1 * s);
    a.y.store(o + i + half, x1 * c + x0 * s);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
