// instructions/gemm_tile.h: GEMM_TILE (6) is GEMV_TILE restricted to the row tile
// [m_off, m_off + M_tile) (prefill / batch): it reads only those rows of x and writes only
// y[m_off : m_off + M_tile, n_off : n_off + N_tile].
#pragma once
#include "instructions/gemv_tile.h"

namespace amk::instructions {

/// Decoded GEMM_TILE operands (mm.m_begin / m_end hold the row tile).
using GemmTileArgs = GemvTileArgs;

/// As decode_gemv_tile, plus BAD_PARAMS unless 0 <= m_off, M_tile >= 1, m_off + M_tile <= rows.
AMK_HD int32_t decode_gemm_tile(const amk_program_t& p, const amk_instruction_t& inst, GemmTileArgs* a) {
  AMK_TRY_DEV(decode_gemv_tile(p, inst, a));
  const int64_t m_off = inst.params.m_off, m_tile = inst.params.M_tile;
  if (m_off < 0 || m_tile < 1 || m_off + m_tile > a->mm.rows) return AMK_DEVERR_BAD_PARAMS;
  a->mm.m_begin = m_off;
  a->mm.m_end = m_off + m_tile;
  return AMK_DEVERR_NONE;
}

/// CPU reference of GEMM_TILE.
int32_t gemm_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
