// vm/gpu_backends.cpp: the seam between the Session and the GPU VMs. CUDA and HIP are independent
// build options and may both be on (one binary, two VMs: vm/gpu_vendor_vm.h); each name maps to
// its VM when the build has it, else to a message that says how to build it. AMK_VM_WITH_CUDA /
// AMK_VM_WITH_HIP are set by vm/CMakeLists.txt for this file only.
#include "vm/gpu_backends.h"

#include "vm/gpu_vendor_vm.h"

namespace amk::vm {
namespace {

[[maybe_unused]] constexpr const char* kNoCudaBuild =
    "this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON; needs nvcc)";
[[maybe_unused]] constexpr const char* kNoHipBuild =
    "this amk was built without the HIP VM (configure with -DAMK_HIP=ON; needs hipcc)";

Status unknown_backend(const std::string& backend) {
  return Status(StatusCode::InvalidArgument, "unknown GPU backend \"" + backend + "\" (expected cuda or hip)");
}

}  // namespace

bool cuda_available(std::string* why_not) {
#if AMK_VM_WITH_CUDA
  return CudaVm::available(why_not);
#else
  if (why_not != nullptr) *why_not = kNoCudaBuild;
  return false;
#endif  // AMK_VM_WITH_CUDA
}

bool hip_available(std::string* why_not) {
#if AMK_VM_WITH_HIP
  return HipVm::available(why_not);
#else
  if (why_not != nullptr) *why_not = kNoHipBuild;
  return false;
#endif  // AMK_VM_WITH_HIP
}

bool gpu_backend_built(const std::string& backend) {
  if (backend == "cuda") return AMK_VM_WITH_CUDA != 0;
  if (backend == "hip") return AMK_VM_WITH_HIP != 0;
  return false;
}

Result<std::unique_ptr<Executor>> make_gpu_executor(const std::string& backend, loader::ProgramImage& image) {
  (void)image;  // unused in a build with neither VM
  std::string why;
  if (backend == "cuda") {
#if AMK_VM_WITH_CUDA
    if (CudaVm::available(&why)) return CudaVm::make_executor(image);
#else
    why = kNoCudaBuild;
#endif  // AMK_VM_WITH_CUDA
  } else if (backend == "hip") {
#if AMK_VM_WITH_HIP
    if (HipVm::available(&why)) return HipVm::make_executor(image);
#else
    why = kNoHipBuild;
#endif  // AMK_VM_WITH_HIP
  } else {
    return unknown_backend(backend);
  }
  return Status(StatusCode::Unsupported, "backend " + backend + " is not available: " + why);
}

Result<GpuMemoryInfo> gpu_memory_info(const std::string& backend) {
  GpuMemoryInfo info;
  std::string why;
  if (backend == "cuda") {
#if AMK_VM_WITH_CUDA
    if (!CudaVm::available(&why)) return Status(StatusCode::Unsupported, "backend cuda is not available: " + why);
    if (Status st = CudaVm::memory_info(&info.free_bytes, &info.total_bytes); !st) return st;
    return info;
#else
    return Status(StatusCode::Unsupported, std::string("backend cuda is not available: ") + kNoCudaBuild);
#endif  // AMK_VM_WITH_CUDA
  }
  if (backend == "hip") {
#if AMK_VM_WITH_HIP
    if (!HipVm::available(&why)) return Status(StatusCode::Unsupported, "backend hip is not available: " + why);
    if (Status st = HipVm::memory_info(&info.free_bytes, &info.total_bytes); !st) return st;
    return info;
#else
    return Status(StatusCode::Unsupported, std::string("backend hip is not available: ") + kNoHipBuild);
#endif  // AMK_VM_WITH_HIP
  }
  return unknown_backend(backend);
}

Result<std::vector<int32_t>> gpu_device_opcodes(const std::string& backend) {
  if (backend == "cuda") {
#if AMK_VM_WITH_CUDA
    return CudaVm::device_opcodes();
#else
    return Status(StatusCode::Unsupported, kNoCudaBuild);
#endif  // AMK_VM_WITH_CUDA
  }
  if (backend == "hip") {
#if AMK_VM_WITH_HIP
    return HipVm::device_opcodes();
#else
    return Status(StatusCode::Unsupported, kNoHipBuild);
#endif  // AMK_VM_WITH_HIP
  }
  return unknown_backend(backend);
}

}  // namespace amk::vm
