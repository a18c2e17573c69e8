// instructions/device_common.cuh: what every device micro-kernel shares: the per-block context
// (shared-memory scratch the persistent kernel hands out) and the block-strided loop idiom.
// A micro-kernel is run by the whole block with uniform control flow; it returns an
// amk_device_error_t that is the same in every thread (decode errors are uniform; data-dependent
// errors are agreed on with block_any) so the kernel can leave the task together.
#pragma once
#include <new>

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

/// Block-shared storage for one `Args` (one buffer per Args type; micro-kernels of a block run one
/// at a time). Raw bytes, because neither nvcc nor clang allow a __shared__ object whose type has
/// default member initializers; decode_once() constructs the object in it.
template <typename Args>
AMK_DEVICE Args* shared_args() {
  struct alignas(Args) Raw {
    unsigned char bytes[sizeof(Args)];
  };
  __shared__ Raw raw;
  return reinterpret_cast<Args*>(raw.bytes);
}

/// Decode a task's operands once per block, into shared memory: thread 0 runs `decode(out)` (out
/// is a __shared__ Args of the calling micro-kernel), the block synchronises and every thread
/// returns thread 0's result. Decoding in every thread would write the Args (several Tensors of
/// shape/stride arrays, hundreds of bytes) to each thread's local memory: per task that was
/// 512 x ~600 B of local stores per SM, more traffic than the task's weight tile.
template <typename Args, typename Decode>
AMK_DEVICE int32_t decode_once(Args* out, Decode&& decode) {
  __shared__ int32_t s_rc;
  if (threadIdx.x == 0) {
    new (out) Args{};  // shared_args() storage is raw bytes: begin the object's lifetime here
    s_rc = decode(out);
  }
  __syncthreads();
  const int32_t rc = s_rc;
  __syncthreads();  // every thread has read s_rc before the next task's decode rewrites it
  return rc;
}

/// Thread index and count of the block as int64 (elementwise loops over numel).
AMK_DEVICE int64_t block_tid() { return static_cast<int64_t>(threadIdx.x); }
AMK_DEVICE int64_t block_threads() { return static_cast<int64_t>(blockDim.x); }

}  // namespace amk::instructions
