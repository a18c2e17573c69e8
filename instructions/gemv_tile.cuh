// instructions/gemv_tile.cuh: GEMV_TILE (5) on the device: y[r, n] = x[r] . W[n] (+ bias[n]) for
// the tile's columns, every row; the streaming loop is gemv_core.cuh's.
#pragma once
#include "instructions/gemv_core.cuh"
#include "instructions/gemv_tile.h"

namespace amk::instructions {

/// GEMV_TILE, whole block.
AMK_DEVICE_NOINLINE int32_t gemv_tile_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  GemvTileArgs* const s_args = shared_args<GemvTileArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](GemvTileArgs* out) { return decode_gemv_tile(p, inst, out); }));
  const GemvTileArgs& a = *s_args;
  return gemv_tile_block(a.mm, kGemvPlain, a.mm.x, 0.0f, a.has_bias ? &a.bias : nullptr, nullptr, ctx);
}

}  // namespace amk::instructions
