// vm/gpu_vendor_memory.cpp: the GPU VMs' device-memory query for the seam (vm/gpu_vendor_vm.h).
// Like vm/cuda/gpu_backends_cuda.cpp it is built twice: as CudaVm::memory_info into amk_vm_cuda
// and, with -DAMK_USE_HIP, as HipVm::memory_info into amk_vm_hip (vm/hip/CMakeLists.txt).
// amk-soak samples it to show that device memory stays flat over a long decode (docs/RELIABILITY.md).
#include <cstddef>

#include "targets/gpu.h"
#include "vm/gpu_vendor_vm.h"

namespace amk::vm {

#ifdef AMK_USE_HIP
Status HipVm::memory_info(uint64_t* free_bytes, uint64_t* total_bytes) {
#else
Status CudaVm::memory_info(uint64_t* free_bytes, uint64_t* total_bytes) {
#endif  // AMK_USE_HIP
  size_t free_b = 0, total_b = 0;
  AMK_GPU_TRY(gpu::mem_get_info(&free_b, &total_b));
  *free_bytes = free_b;
  *total_bytes = total_b;
  return Status();
}

}  // namespace amk::vm
