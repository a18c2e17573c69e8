// instructions/silu_mul.h: SILU_MUL (9) y = gate * sigmoid(gate) * up (SwiGLU), elementwise over
// equal numel. y may be gate or up.
#pragma once
#include <math.h>

#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded SILU_MUL operands.
struct SiluMulArgs {
  Tensor gate, up, y;
};

/// silu(g) * u. 1 / (1 + exp(-g)) saturates cleanly: exp overflows to inf for very negative g,
/// giving sigmoid 0 instead of NaN.
AMK_HD float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

/// silu_mul for the GPU's GEMV prologues (gemv_stage_x, the weight stream's x staging), which
/// compute it for every element of a K-long x at each task's head while the whole block waits:
/// the hardware's approximate exp and division (two MUFU operations) where expf and an IEEE
/// division take ~25 instructions. Llama-3-8B's down (K 14336) stages in 3.3 us with silu_mul
/// and 1.3 us with this on an idle H200 (amk-stage-probe, docs/PERFORMANCE.md row 148). A few ulp from
/// silu_mul (__expf: 2 + 1.2 |g| ulp, __fdividef: 2), far inside the GPU-vs-CPU tolerances;
/// the same limits (__fdividef returns 0 for a denominator past 2^126, as g / inf is). Host
/// code (the CPU VM) keeps silu_mul. -DAMK_PRECISE_STAGE_SILU: silu_mul everywhere (A/B).
AMK_HD float silu_mul_fast(float g, float u) {
#if (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)) && !defined(AMK_PRECISE_STAGE_SILU)
  return __fdividef(g, 1.0f + __expf(-g)) * u;
#else
  return silu_mul(g, u);
#endif
}

/// BAD_PARAMS unless gate, up and y have the same numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_silu_mul(const amk_program_t& p, const amk_instruction_t& inst, SiluMulArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 2, 2, 1));
  AMK_TRY_DEV(bind_input(p, inst, 0, &a->gate));
  AMK_TRY_DEV(bind_input(p, inst, 1, &a->up));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->gate));
  AMK_TRY_DEV(require_float(a->up));
  AMK_TRY_DEV(require_float(a->y));
  if (a->up.numel != a->gate.numel || a->y.numel != a->gate.numel) return AMK_DEVERR_BAD_PARAMS;
  return AMK_DEVERR_NONE;
}

/// CPU reference of SILU_MUL.
int32_t silu_mul_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
