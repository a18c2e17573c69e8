// instructions/device_limits.cuh: limits of the device micro-kernels that the host launcher must
// know to size shared memory. Plain C++ (no device code), so host translation units include it.
#pragma once
#include <stdint.h>

#include "instructions/common/hd.h"

namespace amk::instructions {

/// Largest head_dim ATTENTION_TILE handles on the device (registers per lane hold hd / warp).
constexpr int kDeviceMaxHeadDim = 256;

/// Shared floats ATTENTION_TILE needs for head_dim `hd` with `warps` warps: q [hd], then per warp
/// [acc[hd], m, l], then FUSED ROPE_ATTENTION's fresh k and v rows [2][hd].
AMK_HD constexpr int64_t attention_smem_floats(int64_t hd, int64_t warps) { return hd + warps * (hd + 2) + 2 * hd; }

}  // namespace amk::instructions
