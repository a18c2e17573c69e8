// instructions/device_common.cuh: what every device micro-kernel shares: the per-block context
// (shared-memory scratch the persistent kernel hands out) and the block-strided loop idiom.
// A micro-kernel is run by the whole block with uniform control flow; it returns an
// amk_device_error_t that is the same in every thread (decode errors are uniform; data-dependent
// errors are agreed on with compute_any) so the kernel can leave the task together.
#pragma once
#include <new>

#include "targets/gpu.h"  // first: it defines AMK_HD for device compilation
#include "instructions/block_geometry.h"
#include "instructions/common/tensor.h"
#include "instructions/device_limits.cuh"
#include "instructions/task_blob.h"

namespace amk::instructions {

// Micro-kernels run on the block's compute warps only (block_geometry.h): they size loops,
// reductions and barriers with these, never with blockDim, gpu::warp_count or __syncthreads.

/// Compute threads and warps of the block (compile-time constants: strides fold).
AMK_DEVICE constexpr int64_t block_threads() { return kComputeThreads; }
AMK_DEVICE constexpr int compute_warps() { return kComputeWarps; }
/// This thread's index among the compute threads.
AMK_DEVICE int64_t block_tid() { return static_cast<int64_t>(threadIdx.x); }
/// Barrier over the compute warps.
AMK_DEVICE void compute_barrier() { gpu::named_barrier(kComputeBarrier, kComputeThreads); }
/// compute_barrier that returns whether any compute thread passed a nonzero `pred`.
AMK_DEVICE bool compute_any(int pred) { return gpu::named_barrier_any(kComputeBarrier, kComputeThreads, pred); }
/// Sum / max (NaN-ignoring) over the compute warps; every compute thread gets it. `s_red` holds
/// kMaxWarps floats; contains barriers.
AMK_DEVICE float compute_sum(float v, float* s_red) {
  return gpu::reduce_over_warps(v, s_red, kComputeWarps, [](float x) { return gpu::warp_sum(x); }, gpu::WarpAdd{},
                                [] { compute_barrier(); });
}
AMK_DEVICE float compute_max(float v, float* s_red) {
  return gpu::reduce_over_warps(v, s_red, kComputeWarps, [](float x) { return gpu::warp_max(x); }, gpu::WarpFmax{},
                                [] { compute_barrier(); });
}

/// Shared memory a micro-kernel may use while it runs (contents undefined on entry).
struct DeviceCtx {
  float* s_work;        ///< dynamic shared memory, 16-byte aligned
  int32_t work_floats;  ///< its size in floats
  float* s_red;         ///< 2 * gpu::kMaxWarps floats for block reductions
  /// The task's host-decoded operands (task_blob.h), in shared memory, or nullptr.
  const TaskBlobHeader* blob = nullptr;
#ifdef AMK_TRACE_PROBE
  uint64_t* probe = nullptr;  ///< traced launches: the task's t_wait_begin, which AMK_PROBE overwrites
#endif  // AMK_TRACE_PROBE
};

/// -DAMK_TRACE_PROBE=N (measurement only, docs/PERFORMANCE.md row 116): in a traced launch, thread
/// 0 stamps %globaltimer into the running task's t_wait_begin at the probe point numbered N, so
/// the trace's wait slice starts there; tools/profiling/probe_offsets.py prints (probe - run
/// begin) per stage kind. One point per build: every other AMK_PROBE compiles to nothing.
#ifdef AMK_TRACE_PROBE
#define AMK_PROBE(n, ctx)                                                              \
  do {                                                                                 \
    if (AMK_TRACE_PROBE == (n) && threadIdx.x == 0 && (ctx).probe != nullptr)          \
      *(ctx).probe = gpu::global_timer_ns();                                           \
  } while (0)
#else
#define AMK_PROBE(n, ctx) \
  do {                    \
  } while (0)
#endif  // AMK_TRACE_PROBE

/// Bytes of the block-shared buffer that holds the running micro-kernel's Args: a blob's, which
/// holds the largest Args the host decodes (shared_args checks every Args type against it).
inline constexpr size_t kSharedArgsBytes = static_cast<size_t>(kTaskBlobBytes) - sizeof(TaskBlobHeader);

/// Block-shared storage for the running micro-kernel's `Args`. One buffer for every Args type:
/// micro-kernels of a block run one at a time, none calls another after taking its Args
/// (fused_run hands ROPE_APPEND and ROPE_ATTENTION on before it takes its own), and none reads
/// them after it returns. A buffer per type cost ~6 KiB of static shared memory, which put the
/// Llama-3-8B launch (201 KiB of shared memory with the ring) on the 228 KiB carve-out, with 28 KiB
/// of L1 left instead of 60: on the 1B, that step costs 6.5% (docs/PERFORMANCE.md row 118).
/// Raw bytes, because neither nvcc nor clang allow a __shared__ object whose type has default
/// member initializers; decode_once() constructs the object in it. -DAMK_SHARED_ARGS_PER_TYPE:
/// one buffer per type again (A/B measurements).
AMK_DEVICE unsigned char* shared_args_buffer() {
  struct alignas(16) Raw {
    unsigned char bytes[kSharedArgsBytes];
  };
  __shared__ Raw raw;  // in a function that is no template: one buffer for the whole kernel
  return raw.bytes;
}

template <typename Args>
AMK_DEVICE Args* shared_args() {
  static_assert(sizeof(Args) <= kSharedArgsBytes && alignof(Args) <= 16, "kSharedArgsBytes holds every Args");
#ifdef AMK_SHARED_ARGS_PER_TYPE
  struct alignas(Args) Raw {
    unsigned char bytes[sizeof(Args)];
  };
  __shared__ Raw raw;
  return reinterpret_cast<Args*>(raw.bytes);
#else
  return reinterpret_cast<Args*>(shared_args_buffer());
#endif  // AMK_SHARED_ARGS_PER_TYPE
}

/// A task's operands, once per block, into shared memory (`out`, a __shared__ Args of the calling
/// micro-kernel). From the host-decoded blob when the kernel supplied one of this Args type: the
/// whole block copies it (shared to shared) and thread 0 runs `bind(out)`, the step-dependent
/// part of the decode, unless the loader bound the blob already (header.bound). Otherwise thread
/// 0 runs the full `decode(out)`. Decoding in every thread would write the Args (several
/// Tensors, hundreds of bytes) to each thread's local memory. Returns thread 0's result (or the
/// loader's) in every thread.
template <typename Args, typename Decode, typename Bind>
AMK_DEVICE int32_t decode_once(Args* out, const DeviceCtx& ctx, Decode&& decode, Bind&& bind) {
  __shared__ int32_t s_rc;
  const TaskBlobHeader* const blob = ctx.blob;
  if (blob != nullptr && blob->tag == TaskBlobTag<Args>::value && blob->bytes == static_cast<int32_t>(sizeof(Args))) {
    static_assert(sizeof(Args) % 4 == 0, "blob copies are word by word");
    const auto* src = reinterpret_cast<const int32_t*>(blob + 1);
    auto* dst = reinterpret_cast<int32_t*>(out);
    for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(sizeof(Args) / 4); i += kComputeThreads) dst[i] = src[i];
    compute_barrier();
    // Bound by the persistent kernel's loader ahead of the compute warps (TaskBlobHeader::bound):
    // no bind on thread 0 and two barriers fewer (docs/PERFORMANCE.md row 116). Uniform.
    if (blob->bound != 0) return blob->bound - 1;
    if (threadIdx.x == 0) s_rc = bind(out);
  } else if (threadIdx.x == 0) {
    new (out) Args{};  // shared_args() storage is raw bytes: begin the object's lifetime here
    s_rc = decode(out);
  }
  compute_barrier();
  const int32_t rc = s_rc;
  compute_barrier();  // every thread has read s_rc before the next task's decode rewrites it
  return rc;
}

/// decode_once for ops whose operands do not depend on the step.
template <typename Args, typename Decode>
AMK_DEVICE int32_t decode_once(Args* out, const DeviceCtx& ctx, Decode&& decode) {
  return decode_once(out, ctx, decode, [](Args*) { return static_cast<int32_t>(AMK_DEVERR_NONE); });
}

}  // namespace amk::instructions
