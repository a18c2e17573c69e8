// instructions/dequant.cuh: DEQUANT (13) on the device: y[n, k] = (q[n, k] - zero) * scale with
// the group's scale / zero; I8 or packed signed I4 (low nibble first) through the shared loaders.
#pragma once
#include "instructions/dequant.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// DEQUANT, whole block.
AMK_DEVICE_NOINLINE int32_t dequant_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  DequantArgs* const s_args = shared_args<DequantArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](DequantArgs* out) { return decode_dequant(p, inst, out); }));
  const DequantArgs& a = *s_args;
  block_for(a.rows * a.cols, [&](int64_t i) {
    const int64_t n = i / a.cols, k = i - n * a.cols;
    const int64_t gi = n * a.groups + k / a.group;
    const float zero = a.has_zeros ? a.zeros.load(gi) : 0.0f;
    a.y.store(i, (a.q.load(i) - zero) * a.scales.load(gi));
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
