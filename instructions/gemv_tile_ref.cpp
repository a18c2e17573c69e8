// instructions/gemv_tile_ref.cpp: CPU reference of GEMV_TILE (and the row loop GEMM_TILE shares).
// x rows are widened to fp32 once; the weight rows stream through matmul_row_dots().
#include <vector>

#include "instructions/common/matmul_ref.h"
#include "instructions/gemv_tile.h"

namespace amk::instructions {

void matmul_tile_ref(const MatmulArgs& mm, const Tensor* bias) {
  const int64_t width = mm.n_end - mm.n_begin;
  std::vector<float> xf(static_cast<size_t>(mm.K)), dots(static_cast<size_t>(width));
  for (int64_t r = mm.m_begin; r < mm.m_end; ++r) {
    stage_row_f32(mm.x, r, mm.K, xf.data());
    matmul_row_dots(xf.data(), mm.w, mm.K, mm.n_begin, mm.n_end, dots.data());
    for (int64_t j = 0; j < width; ++j) {
      const int64_t n = mm.n_begin + j;
      const float v = bias != nullptr ? dots[j] + bias->load(n) : dots[j];
      mm.y.store(r * mm.n_out + n, v);
    }
  }
}

int32_t gemv_tile_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  GemvTileArgs a;
  AMK_TRY_DEV(decode_gemv_tile(prog, inst, &a));
  matmul_tile_ref(a.mm, a.has_bias ? &a.bias : nullptr);
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
