// instructions/rope_append.cuh: FUSED ROPE_APPEND on the device: one thread owns a pair
// (i, i + hd/2) of one head, rotates it as rope.cuh does (accurate cosf / sinf) and stores both
// into the cache row pos. decode_rope_append() rejects a pos outside the cache before anything is
// written, so a bad step is a task error, never an out-of-bounds store.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/rope_append.h"
#include "instructions/rope_bf16.cuh"

namespace amk::instructions {

/// FUSED ROPE_APPEND, whole block.
AMK_DEVICE_NOINLINE int32_t rope_append_run(const amk_program_t& p, const amk_instruction_t& inst,
                                            const DeviceCtx& ctx) {
  RopeAppendArgs* const s_args = shared_args<RopeAppendArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(
      s_args, ctx, [&](RopeAppendArgs* out) { return decode_rope_append(p, inst, out); },
      [&](RopeAppendArgs* out) { return bind_rope_append_step(p, inst, out); }));
  const RopeAppendArgs& a = *s_args;
  const float pos = static_cast<float>(a.pos);
  const int64_t base = a.pos * a.row;
  if (rope_bf16_try(a.x, a.inv_freq, a.cache, base, a.head_dim, pos)) return AMK_DEVERR_NONE;
  block_for(a.row / 2, [&](int64_t e) {
    const int64_t h = e / a.half, i = e - h * a.half, o = h * a.head_dim;
    const float ang = pos * a.inv_freq.load(i);
    const float c = cosf(ang), s = sinf(ang);
    const float x0 = a.x.load(o + i), x1 = a.x.load(o + i + a.half);
    a.cache.store(base + o + i, x0 * c - x1 * s);
    a.cache.store(base + o + i + a.half, x1 * c + x0 * s);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
