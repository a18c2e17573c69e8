// vm/cuda/gpu_backends_cuda.cpp: one GPU VM's entry points for the seam (vm/gpu_vendor_vm.h).
// Built twice from this source: as CudaVm into amk_vm_cuda, and with -DAMK_USE_HIP as HipVm into
// amk_vm_hip (vm/hip/CMakeLists.txt). It keeps its "cuda" name because it lives with the VM
// sources both builds share (vm/cuda/ is "the GPU VM", CUDA being the first vendor).
#include "targets/gpu.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/gpu_vendor_vm.h"

namespace amk::vm {
namespace {

#ifdef AMK_USE_HIP
using ThisVm = HipVm;
constexpr const char* kNoDevice = "no AMD GPU found";
constexpr const char* kCountCall = "hipGetDeviceCount";
#else
using ThisVm = CudaVm;
constexpr const char* kNoDevice = "no CUDA GPU found";
constexpr const char* kCountCall = "cudaGetDeviceCount";
#endif  // AMK_USE_HIP

}  // namespace

bool ThisVm::available(std::string* why_not) {
  int count = 0;
  const gpu::Error e = gpu::device_count(&count);
  if (e == gpu::kSuccess && count > 0) return true;
  if (why_not != nullptr) {
    // "no AMD GPU found (hipGetDeviceCount: hipErrorNoDevice: no ROCm-capable device is detected)"
    std::string detail = "0 devices";
    if (e != gpu::kSuccess) {
      const std::string name = gpu::error_name(e), text = gpu::error_string(e);
      detail = text == name ? name : name + ": " + text;  // HIP 5.2's error string is the name
    }
    *why_not = std::string(kNoDevice) + " (" + kCountCall + ": " + detail + ")";
  }
  return false;
}

Result<std::unique_ptr<Executor>> ThisVm::make_executor(loader::ProgramImage& image) {
  std::string why;
  if (!available(&why)) return Status(StatusCode::Unsupported, why);
  return make_cuda_executor(image);
}

}  // namespace amk::vm
