// targets/gpu.h: the one header that includes the vendor runtime (cuda_runtime.h or
// hip/hip_runtime.h). It wraps a small API as functions, so device code never names a vendor:
// warp geometry (kWarpSize is 64 on AMD CDNA: never write a literal 32), shuffles and warp/block
// reductions, device-scope acquire/release atomics for the task counters, a spin pause, 16-byte
// streaming loads, and the host runtime calls behind AMK_GPU_TRY. Host-only translation units
// (built by the C++ compiler) may include it too: they see the runtime calls and AMK_GPU_TRY only.
#pragma once

#include "targets/gpu_vendor.h"  // AMK_GPU_VENDOR_NS: amk::gpu's symbols are vendor-named

#if defined(AMK_USE_HIP) || defined(__HIPCC__)
#ifndef AMK_USE_HIP
#define AMK_USE_HIP 1
#endif
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif  // AMK_USE_HIP

#include <stdint.h>

#include <string>

#include "ir/status.h"
#include "targets/warp_butterfly.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define AMK_HD __host__ __device__ inline
#define AMK_DEVICE __device__ inline
/// A device function the compiler must keep out of line (each opcode gets its own registers).
#ifdef AMK_USE_HIP
#define AMK_DEVICE_NOINLINE __device__ __attribute__((noinline)) inline  // HIP 5.2 defines __noinline__ empty
#else
#define AMK_DEVICE_NOINLINE __device__ __noinline__ inline
#endif  // AMK_USE_HIP
#define AMK_GPU_COMPILER 1
#else
#define AMK_HD inline  // host-only TU: AMK_DEVICE is left undefined on purpose
#endif  // __CUDACC__ || __HIPCC__

namespace amk::gpu {
inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side (gpu_vendor.h)

// ---------------------------------------------------------------------------------------------
// Vendor type and constant names.
#ifdef AMK_USE_HIP
using Error = hipError_t;
using Stream = hipStream_t;
inline constexpr Error kSuccess = hipSuccess;
inline constexpr Error kNotReady = hipErrorNotReady;
// 64 in the host pass too: the host sizes shared memory and block reductions from kWarpSize, so
// both passes must agree. amk targets wave64 CDNA (gfx90a, gfx942); a wave32 target (RDNA) stops
// the build here rather than run with mismatched host and device warp sizes.
inline constexpr int kWarpSize = 64;
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 64
#error "amk's HIP backend needs 64-lane wavefronts (CDNA: gfx90a, gfx942); this target uses 32"
#endif  // __AMDGCN_WAVEFRONT_SIZE
#else
using Error = cudaError_t;
using Stream = cudaStream_t;
inline constexpr Error kSuccess = cudaSuccess;
inline constexpr Error kNotReady = cudaErrorNotReady;
inline constexpr int kWarpSize = 32;
#endif  // AMK_USE_HIP

static_assert(warp_width_ok(kWarpSize), "lane_id() masks with kWarpSize - 1: it must be a power of two");
/// The most warps a block of the persistent kernel may have (1024 threads).
inline constexpr int kMaxWarps = 1024 / kWarpSize;

// ---------------------------------------------------------------------------------------------
// Host runtime calls. Each returns the vendor error code; wrap them in AMK_GPU_TRY.
#ifdef AMK_USE_HIP
inline const char* error_string(Error e) { return hipGetErrorString(e); }
inline const char* error_name(Error e) { return hipGetErrorName(e); }
inline Error get_last_error() { return hipGetLastError(); }
inline Error device_count(int* n) { return hipGetDeviceCount(n); }
inline Error get_device(int* d) { return hipGetDevice(d); }
inline Error device_props(hipDeviceProp_t* p, int d) { return hipGetDeviceProperties(p, d); }
using DeviceProps = hipDeviceProp_t;
inline Error device_attribute(int* v, hipDeviceAttribute_t a, int d) { return hipDeviceGetAttribute(v, a, d); }
/// Free and total memory of the current device, in bytes (every process's allocations count).
inline Error mem_get_info(size_t* free_bytes, size_t* total_bytes) { return hipMemGetInfo(free_bytes, total_bytes); }
inline Error malloc_device(void** p, size_t bytes) { return hipMalloc(p, bytes); }
inline Error free_device(void* p) { return hipFree(p); }
/// Coherent (fine-grained) on AMD: the kernel polls the abort flag in this memory while it runs;
/// non-coherent (coarse-grained) host memory, the default unless HIP_HOST_COHERENT=1, may be
/// cached on the device, so a running kernel would not see the host's write until it ends.
inline Error host_alloc_mapped(void** p, size_t bytes) {
  return hipHostMalloc(p, bytes, hipHostMallocMapped | hipHostMallocCoherent);
}
inline Error host_free(void* p) { return hipHostFree(p); }
inline Error host_device_pointer(void** d, void* h) { return hipHostGetDevicePointer(d, h, 0); }
inline Error memcpy_h2d(void* d, const void* h, size_t n) { return hipMemcpy(d, h, n, hipMemcpyHostToDevice); }
inline Error memcpy_d2h(void* h, const void* d, size_t n) { return hipMemcpy(h, d, n, hipMemcpyDeviceToHost); }
inline Error memcpy_h2d_async(void* d, const void* h, size_t n, Stream s) {
  return hipMemcpyAsync(d, h, n, hipMemcpyHostToDevice, s);
}
inline Error memcpy_d2h_async(void* h, const void* d, size_t n, Stream s) {
  return hipMemcpyAsync(h, d, n, hipMemcpyDeviceToHost, s);
}
inline Error memcpy_d2d_async(void* d, const void* s, size_t n, Stream st) {
  return hipMemcpyAsync(d, s, n, hipMemcpyDeviceToDevice, st);
}
inline Error memset_device(void* d, int v, size_t n) { return hipMemset(d, v, n); }
inline Error memset_async(void* d, int v, size_t n, Stream s) { return hipMemsetAsync(d, v, n, s); }
inline Error stream_create(Stream* s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline Error stream_destroy(Stream s) { return hipStreamDestroy(s); }
inline Error stream_query(Stream s) { return hipStreamQuery(s); }
inline Error stream_sync(Stream s) { return hipStreamSynchronize(s); }
inline Error device_sync() { return hipDeviceSynchronize(); }
using Event = hipEvent_t;
inline Error event_create(Event* e) { return hipEventCreate(e); }
inline Error event_destroy(Event e) { return hipEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return hipEventRecord(e, s); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return hipEventElapsedTime(ms, a, b); }
#else
inline const char* error_string(Error e) { return cudaGetErrorString(e); }
inline const char* error_name(Error e) { return cudaGetErrorName(e); }
inline Error get_last_error() { return cudaGetLastError(); }
inline Error device_count(int* n) { return cudaGetDeviceCount(n); }
inline Error get_device(int* d) { return cudaGetDevice(d); }
inline Error device_props(cudaDeviceProp* p, int d) { return cudaGetDeviceProperties(p, d); }
using DeviceProps = cudaDeviceProp;
inline Error device_attribute(int* v, cudaDeviceAttr a, int d) { return cudaDeviceGetAttribute(v, a, d); }
inline Error mem_get_info(size_t* free_bytes, size_t* total_bytes) { return cudaMemGetInfo(free_bytes, total_bytes); }
inline Error malloc_device(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
inline Error free_device(void* p) { return cudaFree(p); }
inline Error host_alloc_mapped(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocMapped); }
inline Error host_free(void* p) { return cudaFreeHost(p); }
inline Error host_device_pointer(void** d, void* h) { return cudaHostGetDevicePointer(d, h, 0); }
inline Error memcpy_h2d(void* d, const void* h, size_t n) { return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); }
inline Error memcpy_d2h(void* h, const void* d, size_t n) { return cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); }
inline Error memcpy_h2d_async(void* d, const void* h, size_t n, Stream s) {
  return cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);
}
inline Error memcpy_d2h_async(void* h, const void* d, size_t n, Stream s) {
  return cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s);
}
inline Error memcpy_d2d_async(void* d, const void* s, size_t n, Stream st) {
  return cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, st);
}
inline Error memset_device(void* d, int v, size_t n) { return cudaMemset(d, v, n); }
inline Error memset_async(void* d, int v, size_t n, Stream s) { return cudaMemsetAsync(d, v, n, s); }
inline Error stream_create(Stream* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline Error stream_destroy(Stream s) { return cudaStreamDestroy(s); }
inline Error stream_query(Stream s) { return cudaStreamQuery(s); }
inline Error stream_sync(Stream s) { return cudaStreamSynchronize(s); }
inline Error device_sync() { return cudaDeviceSynchronize(); }
using Event = cudaEvent_t;
inline Error event_create(Event* e) { return cudaEventCreate(e); }
inline Error event_destroy(Event e) { return cudaEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return cudaEventRecord(e, s); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return cudaEventElapsedTime(ms, a, b); }
#endif  // AMK_USE_HIP

/// Status::GpuRuntime naming the failed statement, where it is, and the vendor's words.
inline Status runtime_status(Error e, const char* expr, const char* file, int line) {
  return Status(StatusCode::GpuRuntime, std::string(expr) + " failed at " + file + ":" + std::to_string(line) +
                                            ": " + error_name(e) + " (" + error_string(e) + ")");
}

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::gpu

/// Evaluate a runtime call; on failure return Status::GpuRuntime from the enclosing function.
#define AMK_GPU_TRY(expr)                                                              \
  do {                                                                                 \
    const ::amk::gpu::Error amk_gpu_err_ = (expr);                                     \
    if (amk_gpu_err_ != ::amk::gpu::kSuccess)                                          \
      return ::amk::gpu::runtime_status(amk_gpu_err_, #expr, __FILE__, __LINE__);      \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Device API (only in translation units built by nvcc / hipcc).
#ifdef AMK_GPU_COMPILER
namespace amk::gpu {
inline namespace AMK_GPU_VENDOR_NS {

/// This thread's lane within its warp.
AMK_DEVICE int lane_id() { return static_cast<int>(threadIdx.x) & (kWarpSize - 1); }
/// This thread's warp within the block.
AMK_DEVICE int warp_id() { return static_cast<int>(threadIdx.x) / kWarpSize; }
/// Warps in this block.
AMK_DEVICE int warp_count() { return static_cast<int>(blockDim.x) / kWarpSize; }

/// Memory ordering and reconvergence among the lanes of this warp (all lanes call it).
AMK_DEVICE void warp_sync() {
#ifdef AMK_USE_HIP
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
  __syncwarp();
#endif  // AMK_USE_HIP
}

/// Butterfly exchange within a warp (every lane participates).
/// T: float or int.
template <typename T>
AMK_DEVICE T shfl_xor(T v, int mask) {
#ifdef AMK_USE_HIP
  return __shfl_xor(v, mask, kWarpSize);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask, kWarpSize);
#endif  // AMK_USE_HIP
}
/// Lane `src`'s value (every lane participates).
template <typename T>
AMK_DEVICE T shfl(T v, int src) {
#ifdef AMK_USE_HIP
  return __shfl(v, src, kWarpSize);
#else
  return __shfl_sync(0xffffffffu, v, src, kWarpSize);
#endif  // AMK_USE_HIP
}

/// The butterfly's exchange on the device: one shuffle (targets/warp_butterfly.h).
struct WarpXor {
  AMK_DEVICE float operator()(float v, int m) const { return shfl_xor(v, m); }
};
struct WarpAdd {
  AMK_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct WarpFmax {
  AMK_DEVICE float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Sum over the warp; every lane gets the total.
AMK_DEVICE float warp_sum(float v) { return warp_butterfly<kWarpSize>(v, WarpXor{}, WarpAdd{}); }
/// Max over the warp (NaN-ignoring, as fmaxf); every lane gets it.
AMK_DEVICE float warp_max(float v) { return warp_butterfly<kWarpSize>(v, WarpXor{}, WarpFmax{}); }

/// Block barrier.
AMK_DEVICE void block_barrier() { __syncthreads(); }

/// Barrier `id` (1..15) over the first `threads` threads of the block (a multiple of kWarpSize),
/// so that other warps may run on without taking part: the persistent kernel's compute warps
/// synchronise among themselves while its loader warp streams. Barrier 0 is __syncthreads'.
/// AMD workgroups have a single barrier: there `threads` must be the whole block (amk runs no
/// loader warp on HIP, instructions/block_geometry.h) and this is __syncthreads.
AMK_DEVICE void named_barrier(int id, int threads) {
#ifdef AMK_USE_HIP
  (void)id;
  (void)threads;
  __syncthreads();
#else
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
#endif  // AMK_USE_HIP
}
/// named_barrier that also returns whether any of the `threads` passed a nonzero `pred`.
AMK_DEVICE bool named_barrier_any(int id, int threads, int pred) {
#ifdef AMK_USE_HIP
  (void)id;
  (void)threads;
  return __syncthreads_or(pred) != 0;
#else
  int any;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.s32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n selp.s32 %0, 1, 0, q;\n}\n"
      : "=r"(any)
      : "r"(pred), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
#endif  // AMK_USE_HIP
}

/// Barrier after which thread 0 may publish the participating threads' global writes with one
/// atomic_add_release_gpu. Every thread calls it after its last write of the task.
/// CUDA: the barrier suffices (bar.sync orders the block's writes before thread 0's fence, and
/// the PTX model makes that release cumulative). AMD: a release in one wavefront only waits for
/// that wavefront's own stores (s_waitcnt counts per wave), so another wavefront's store could
/// still be in flight to L2 when thread 0 signals, unless the barrier itself waits. clang 15 for
/// gfx90a does emit `s_waitcnt vmcnt(0)` before `s_barrier`, but that is a lowering detail (LLVM
/// has omitted it for other targets' workgroup fences). So each thread first makes its own writes
/// agent-visible (agent-scope release fence: its stores reach L2), then the barrier; on gfx90a
/// this compiles to the same instructions as the plain barrier (docs/HIP.md).
AMK_DEVICE void named_barrier_release(int id, int threads) {
#ifdef AMK_USE_HIP
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
#endif  // AMK_USE_HIP
  named_barrier(id, threads);
}

/// A reduction over `warps` warps (the block's first ones): each warp reduces with `warp_op`,
/// lane 0 parks the result in s_red, `barrier()` publishes, every thread folds s_red in the same
/// order with `op`, and a second barrier frees s_red for the next reduction.
template <typename WarpOp, typename Op, typename Barrier>
AMK_DEVICE float reduce_over_warps(float v, float* s_red, int warps, WarpOp warp_op, Op op, Barrier barrier) {
  v = warp_op(v);
  if (lane_id() == 0) s_red[warp_id()] = v;
  barrier();
  float t = s_red[0];
  for (int w = 1; w < warps; ++w) t = op(t, s_red[w]);
  barrier();
  return t;
}

/// Sum over the block; every thread gets the total. `s_red` holds kMaxWarps floats (shared).
/// Contains barriers: every thread of the block must call it.
AMK_DEVICE float block_sum(float v, float* s_red) {
  return reduce_over_warps(v, s_red, warp_count(), [](float x) { return warp_sum(x); }, WarpAdd{},
                           [] { __syncthreads(); });
}
/// Max over the block (NaN-ignoring); every thread gets it. Same contract as block_sum.
AMK_DEVICE float block_max(float v, float* s_red) {
  return reduce_over_warps(v, s_red, warp_count(), [](float x) { return warp_max(x); }, WarpFmax{},
                           [] { __syncthreads(); });
}

/// Block-scope acquire load of a word in shared memory: one warp sees another's arrivals (the
/// persistent kernel's loader / compute hand-offs where mbarriers are unavailable).
AMK_DEVICE int32_t load_acquire_cta(const int32_t* p) {
#ifdef AMK_USE_HIP
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_WORKGROUP);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  int32_t v;
  asm volatile("ld.acquire.cta.shared.s32 %0, [%1];"
               : "=r"(v)
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p)))
               : "memory");
  return v;
#else
  const int32_t v = *reinterpret_cast<const volatile int32_t*>(p);
  __threadfence_block();
  return v;
#endif  // AMK_USE_HIP
}

/// Device-scope acquire load of a counter: later reads see what the releasing producer wrote.
AMK_DEVICE uint32_t load_acquire_gpu(const uint32_t* p) {
#ifdef AMK_USE_HIP
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  const uint32_t v = *reinterpret_cast<const volatile uint32_t*>(p);
  __threadfence();
  return v;
#endif  // AMK_USE_HIP
}

/// Device-scope relaxed load of a counter, for polling: unlike an acquire load it does not
/// invalidate the SM's L1 on every iteration (on sm_70+ each ld.acquire.gpu costs a CCTL.IVALL,
/// which also throws away the other warps' cached lines). Follow a successful poll with
/// fence_acquire_gpu() before reading what the producer wrote.
AMK_DEVICE uint32_t load_relaxed_gpu(const uint32_t* p) {
#ifdef AMK_USE_HIP
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return *reinterpret_cast<const volatile uint32_t*>(p);
#endif  // AMK_USE_HIP
}

/// Device-scope acquire fence: with a preceding relaxed load that observed a released value,
/// later reads see what the releasing producer wrote (the fence-based form of an acquire load).
AMK_DEVICE void fence_acquire_gpu() {
#ifdef AMK_USE_HIP
  // Agent scope, spelled out: clang's __atomic_thread_fence is system scope on AMDGPU, which on
  // gfx90a adds an L2 writeback and invalidate (buffer_wbl2, buffer_invl2) to every poll success.
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");
#elif !defined(AMK_FENCE_ACQ_REL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
  // An acquire-only fence (PTX 8.6, sm_90): on an H200 it is a bare L1 invalidate (CCTL.IVALL),
  // where fence.acq_rel.gpu adds a MEMBAR.ALL.GPU that drains this thread's outstanding memory
  // operations first. Every counter wait pays it once: per hop 1.80 -> 1.55 us, Llama-1B
  // -2.0% per token (docs/PERFORMANCE.md, row 71). -DAMK_FENCE_ACQ_REL for the A/B.
  asm volatile("fence.acquire.gpu;" ::: "memory");
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
  __threadfence();
#endif  // AMK_USE_HIP
}

/// Device-scope release increment: every write this thread ordered before it (the block's writes,
/// after a barrier) is visible to whoever acquires the new value.
/// CUDA: red.release alone. A release is cumulative in the PTX memory model: the other threads'
/// writes that thread 0 observed through bar.sync are released with its own, so the block needs
/// no sequentially consistent fence (__threadfence, fence.sc.gpu) in front of it. The task's end
/// waits on each fence on thread 0, and every compute barrier of the next task waits on thread 0
/// (docs/PERFORMANCE.md, row 70). -DAMK_SC_TASK_END restores the extra fence for an A/B run.
AMK_DEVICE void atomic_add_release_gpu(uint32_t* p, uint32_t v) {
#ifdef AMK_USE_HIP
  __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#ifdef AMK_SC_TASK_END
  __threadfence();
#endif  // AMK_SC_TASK_END
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __threadfence();
  atomicAdd(p, v);
#endif  // AMK_USE_HIP
}

/// Device-scope relaxed store: a value that orders nothing else (a progress word the host reads
/// after the stream has drained). Unlike a release store it does not wait for this thread's
/// earlier memory operations (the counter increment just before it) to complete.
AMK_DEVICE void store_relaxed_gpu(int32_t* p, int32_t v) {
#ifdef AMK_USE_HIP
  __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#ifdef AMK_SC_TASK_END
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#endif  // AMK_SC_TASK_END
#else
  *reinterpret_cast<volatile int32_t*>(p) = v;
#endif  // AMK_USE_HIP
}

/// A load the compiler may not hoist or cache (flags written by the host or other blocks).
AMK_DEVICE int32_t load_volatile(const int32_t* p) { return *reinterpret_cast<const volatile int32_t*>(p); }

/// First-writer-wins compare-and-swap on a device word; returns the old value.
AMK_DEVICE int32_t atomic_cas(int32_t* p, int32_t expected, int32_t desired) {
  return atomicCAS(p, expected, desired);
}

/// Sleep about `ns` nanoseconds in a spin loop (hands issue slots to other warps).
AMK_DEVICE void spin_pause(uint32_t ns) {
#ifdef AMK_USE_HIP
  // s_sleep takes a compile-time count of 64-clock units (~40 ns at 1.7 GHz), so loop over it.
  for (uint32_t i = 0; i < ns; i += 64) __builtin_amdgcn_s_sleep(1);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(ns);
#else
  (void)ns;
#endif  // AMK_USE_HIP
}

/// 16 bytes of read-only data (weights) through the non-coherent path; p is 16-byte aligned.
AMK_DEVICE uint4 load_stream16(const void* p) {
#ifdef AMK_USE_HIP
  return *static_cast<const uint4*>(p);
#else
  return __ldg(static_cast<const uint4*>(p));
#endif  // AMK_USE_HIP
}

/// Tells the compiler that `p` points into shared memory, so that the accesses through it become
/// ld.shared / st.shared with 32-bit addresses instead of generic ones. nvcc infers that by itself
/// only where the pointer visibly comes from a __shared__ array; a pointer read from memory (the
/// kernel's SharedState, a DeviceCtx) or passed into a __noinline__ function stays generic: the
/// streamed fold's chunk loop (mlp_fold_streamed) had not one shared load (docs/PERFORMANCE.md
/// row 163). Undefined behaviour if `p` is not shared memory: callers pass only the work area,
/// the ring and the kernel's SharedState. On HIP nothing (there is no __isShared).
/// Once per base pointer: nvcc 13.0 folds the second of two assumptions on pointers derived from
/// one base (q and q + k, or &s->a and &s->c) to false, which makes the code after it unreachable
/// and deletes it (a streamed fold whose chunk loop vanished and hung; the 4-line reproducer is in
/// row 163). Assume on the base (the struct, the array) instead: derived pointers need none, the
/// compiler carries the address space through the arithmetic. Independent pointers are fine.
AMK_DEVICE void assume_shared(const void* p) {
#if defined(__CUDA_ARCH__)
  __builtin_assume(__isShared(p));
#else
  (void)p;
#endif  // __CUDA_ARCH__
}

/// A device-wide clock for traces, in nanoseconds: %globaltimer on CUDA (the same clock in every
/// SM, unlike clock64); on AMD the constant-rate wall clock, converted with its nominal 100 MHz
/// (hipDeviceAttributeWallClockRate reports it; the trace only needs a common, monotonic clock).
AMK_DEVICE uint64_t global_timer_ns() {
#if defined(__HIP_DEVICE_COMPILE__)
  // s_memrealtime (gfx8+) is the 100 MHz clock HIP's wall_clock64() reads; HIP 5.2 declares
  // wall_clock64() only in the device pass, so name the builtin directly.
  return static_cast<uint64_t>(__builtin_amdgcn_s_memrealtime()) * 10u;
#elif defined(AMK_USE_HIP)
  return 0;  // host pass of a HIP compile: never called
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif  // AMK_USE_HIP
}

/// The hardware id of the SM (CUDA %smid) this thread runs on, or -1 where it is not read (HIP).
/// PTX allows it to change after a preemption: a record of where a block started, never an index
/// that correctness may rest on.
AMK_DEVICE int32_t sm_id() {
#if defined(AMK_USE_HIP)
  return -1;
#else
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return static_cast<int32_t>(id);
#endif  // AMK_USE_HIP
}

/// f16 bits -> f32 with the hardware conversion (exact).
AMK_DEVICE float half_bits_to_float(uint16_t h) {
#ifdef AMK_USE_HIP
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
#else
  return __half2float(__ushort_as_half(h));
#endif  // AMK_USE_HIP
}

/// Warm the L2 with the lines of [p, p + bytes); this thread takes lines `first`, `first+stride`...
/// A hint only: never faults beyond what a load of the same bytes would.
AMK_DEVICE void prefetch_l2_lines(const void* p, uint64_t bytes, int first, int stride) {
  const char* c = static_cast<const char*>(p);
  for (uint64_t off = static_cast<uint64_t>(first) * 128u; off < bytes; off += static_cast<uint64_t>(stride) * 128u) {
#if !defined(AMK_USE_HIP) && defined(__CUDA_ARCH__)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
#else
    (void)c;
#endif  // CUDA
  }
}

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::gpu
#endif  // AMK_GPU_COMPILER
