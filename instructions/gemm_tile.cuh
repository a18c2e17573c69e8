// instructions/gemm_tile.cuh: GEMM_TILE (6) on the device: GEMV_TILE over the row tile
// [m_off, m_off + M_tile) (rows one after another: decode-time prefill is rare and small).
#pragma once
#include "instructions/gemm_tile.h"
#include "instructions/gemv_core.cuh"

namespace amk::instructions {

/// GEMM_TILE, whole block.
AMK_DEVICE_NOINLINE int32_t gemm_tile_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  GemmTileArgs* const s_args = shared_args<GemmTileArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](GemmTileArgs* out) { return decode_gemm_tile(p, inst, out); }));
  const GemmTileArgs& a = *s_args;
  return gemv_tile_block(a.mm, kGemvPlain, a.mm.x, 0.0f, a.has_bias ? &a.bias : nullptr, nullptr, ctx);
}

}  // namespace amk::instructions
