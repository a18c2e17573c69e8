// instructions/device_common.cuh: what every device micro-kernel shares: the per-block context
// (shared-memory scratch the persistent kernel hands out) and the block-strided loop idiom.
// A micro-kernel is run by the whole block with uniform control flow; it returns an
// amk_device_error_t that is the same in every thread (decode errors are uniform; data-dependent
// errors are agreed on with block_any) so the kernel can leave the task together.
#pragma once
#include "targets/gpu.h"  // first: it defines AMK_HD for device compilation
#include "instructions/common/tensor.h"
#include "instructions/device_limits.cuh"

namespace amk::instructions {

/// Shared memory a micro-kernel may use while it runs (contents undefined on entry).
struct DeviceCtx {
  float* s_work;        ///< dynamic shared memory, 16-byte aligned
  int32_t work_floats;  ///< its size in floats
  float* s_red;         ///< 2 * gpu::kMaxWarps floats for block reductions
};

/// Thread index and count of the block as int64 (elementwise loops over numel).
AMK_DEVICE int64_t block_tid() { return static_cast<int64_t>(threadIdx.x); }
AMK_DEVICE int64_t block_threads() { return static_cast<int64_t>(blockDim.x); }

}  // namespace amk::instructions
