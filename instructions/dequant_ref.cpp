// instructions/dequant_ref.cpp: CPU reference of DEQUANT. The integer minus the zero point is
// exact in fp32 for I8 / I4 codes, so the only rounding is the multiply and the output cast.
#include "instructions/dequant.h"

namespace amk::instructions {

int32_t dequant_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  DequantArgs a;
  AMK_TRY_DEV(decode_dequant(prog, inst, &a));
  for (int64_t n = 0; n < a.rows; ++n) {
    for (int64_t k = 0; k < a.cols; ++k) {
      const int64_t gi = n * a.groups + k / a.group;
      const float zero = a.has_zeros ? a.zeros.load(gi) : 0.0f;
      const int64_t i = n * a.cols + k;
      a.y.store(i, (a.q.load(i) - zero) * a.scales.load(gi));
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
