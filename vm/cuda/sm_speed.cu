// vm/cuda/sm_speed.cu: see sm_speed.h. CUDA only: HIP does not read an SM id (gpu::sm_id), so the
// HIP VM neither builds nor calls this.
#include "vm/cuda/sm_speed.h"

#include <string>

#include "targets/cuda/bulk_copy.cuh"
#include "targets/gpu.h"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {
namespace {

constexpr int kThreads = 256;
// The weight ring's shape (two 64 KiB slots) streams at the rate the megakernel sees; four of
// 32 KiB keep as many bytes in flight. 128 KiB of shared memory also keeps a second block off
// each SM, so every block has its SM to itself.
constexpr int kSlots = 4;
constexpr uint32_t kSlotBytes = uint32_t{1} << 15;  // 32 KiB
constexpr size_t kDynSmem = size_t{kSlots} * kSlotBytes;

__global__ void __launch_bounds__(kThreads, 1)
    amk_sm_speed_kernel(const char* src, long long bytes_per_block, int32_t* sm_out, unsigned long long* ns_out,
                        unsigned* sink) {
  extern __shared__ float4 s_slots[];
  const char* mine = src + static_cast<long long>(blockIdx.x) * bytes_per_block;
  __syncthreads();
  const uint64_t t0 = gpu::global_timer_ns();
#if AMK_HAVE_BULK_COPY
  // One thread keeps the slots busy with bulk copies and re-issues each as it lands: the TMA
  // rate, which is what the megakernel's loader asks of an SM.
  __shared__ uint64_t bars[kSlots];
  if (threadIdx.x == 0) {
    for (int i = 0; i < kSlots; ++i) gpu::mbarrier_init(&bars[i]);
    gpu::mbarrier_init_fence();
    char* slots = reinterpret_cast<char*>(s_slots);
    const long long chunks = bytes_per_block / kSlotBytes;
    long long issued = 0;
    for (; issued < chunks && issued < kSlots; ++issued)
      gpu::bulk_copy_to_shared(slots + issued * kSlotBytes, mine + issued * kSlotBytes, kSlotBytes, &bars[issued]);
    for (long long done = 0; done < chunks; ++done) {
      const int slot = static_cast<int>(done % kSlots);
      gpu::mbarrier_wait_parity(&bars[slot], static_cast<uint32_t>((done / kSlots) & 1));
      if (issued < chunks) {
        gpu::bulk_copy_to_shared(slots + slot * kSlotBytes, mine + issued * kSlotBytes, kSlotBytes, &bars[slot]);
        ++issued;
      }
    }
  }
  (void)sink;
#else
  // Without bulk copies: every thread streams 16-byte words, eight in flight.
  const int4* words = reinterpret_cast<const int4*>(mine);
  const long long n = bytes_per_block / 16;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < n; i += 8LL * kThreads) {
    int4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = i + u * kThreads < n ? words[i + u * kThreads] : int4{0, 0, 0, 0};
#pragma unroll
    for (int u = 0; u < 8; ++u) acc ^= static_cast<unsigned>(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  if (acc == 0x9e3779b9u) atomicAdd(sink, 1u);  // keeps the loads; the buffer is zeros, so never taken
  (void)s_slots;
#endif  // AMK_HAVE_BULK_COPY
  __syncthreads();
  if (threadIdx.x == 0) {
    sm_out[blockIdx.x] = gpu::sm_id();
    ns_out[blockIdx.x] = gpu::global_timer_ns() - t0;
  }
}

/// Device allocations freed on every return path.
struct DeviceScratch {
  void* p = nullptr;
  ~DeviceScratch() {
    if (p != nullptr) (void)gpu::free_device(p);
  }
};

}  // namespace

Result<SmSpeeds> measure_sm_speeds(int mib_per_sm, int launches) {
  if (mib_per_sm < 1 || launches < 1)
    return Status(StatusCode::InvalidArgument, "measure_sm_speeds: mib_per_sm " + std::to_string(mib_per_sm) +
                                                   " and launches " + std::to_string(launches) + " must be >= 1");
  int dev = 0, sms = 0, optin = 0;
  AMK_GPU_TRY(gpu::get_device(&dev));
  AMK_GPU_TRY(gpu::device_attribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  AMK_GPU_TRY(gpu::device_attribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const long long bytes_per_block = static_cast<long long>(mib_per_sm) << 20;
  const size_t total = static_cast<size_t>(bytes_per_block) * static_cast<size_t>(sms);
  const size_t dyn = std::min(kDynSmem, static_cast<size_t>(optin) - 1024);  // room for the barriers
  DeviceScratch src, sm_out, ns_out, sink;
  AMK_GPU_TRY(gpu::malloc_device(&src.p, total));
  AMK_GPU_TRY(gpu::malloc_device(&sm_out.p, sizeof(int32_t) * static_cast<size_t>(sms)));
  AMK_GPU_TRY(gpu::malloc_device(&ns_out.p, sizeof(uint64_t) * static_cast<size_t>(sms)));
  AMK_GPU_TRY(gpu::malloc_device(&sink.p, sizeof(unsigned)));
  AMK_GPU_TRY(gpu::memset_device(src.p, 0, total));
  AMK_GPU_TRY(cudaFuncSetAttribute(amk_sm_speed_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(dyn)));
  std::vector<std::vector<int32_t>> placed;
  std::vector<std::vector<uint64_t>> took;
  for (int l = 0; l <= launches; ++l) {  // launch 0 warms up (code, TLBs) and is not counted
    amk_sm_speed_kernel<<<sms, kThreads, dyn>>>(static_cast<const char*>(src.p), bytes_per_block,
                                                static_cast<int32_t*>(sm_out.p),
                                                static_cast<unsigned long long*>(ns_out.p),
                                                static_cast<unsigned*>(sink.p));
    AMK_GPU_TRY(gpu::get_last_error());
    AMK_GPU_TRY(gpu::device_sync());
    if (l == 0) continue;
    placed.emplace_back(static_cast<size_t>(sms));
    took.emplace_back(static_cast<size_t>(sms));
    AMK_GPU_TRY(gpu::memcpy_d2h(placed.back().data(), sm_out.p, sizeof(int32_t) * static_cast<size_t>(sms)));
    AMK_GPU_TRY(gpu::memcpy_d2h(took.back().data(), ns_out.p, sizeof(uint64_t) * static_cast<size_t>(sms)));
  }
  return sm_speeds_from_times(placed, took);
}

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
