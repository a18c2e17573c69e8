// vm/cuda/gpu_backends_cuda.cpp: the GPU seam in builds with the CUDA VM (replaces
// gpu_backends_none.cpp): "cuda" is available when a device is present; HIP is not in this build.
#include "targets/gpu.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/gpu_backends.h"

namespace amk::vm {

bool cuda_available(std::string* why_not) {
  int count = 0;
  const gpu::Error e = gpu::device_count(&count);
  if (e != gpu::kSuccess || count == 0) {
    if (why_not != nullptr)
      *why_not = e != gpu::kSuccess ? std::string("no usable CUDA device: ") + gpu::error_string(e)
                                    : std::string("no CUDA device is present");
    return false;
  }
  return true;
}

bool hip_available(std::string* why_not) {
  if (why_not != nullptr) *why_not = "this amk was built with the CUDA VM, not the HIP VM";
  return false;
}

Result<std::unique_ptr<Executor>> make_gpu_executor(const std::string& backend, loader::ProgramImage& image) {
  if (backend != "cuda") {
    std::string why;
    hip_available(&why);
    return Status(StatusCode::Unsupported, "backend " + backend + " is not available: " + why);
  }
  std::string why;
  if (!cuda_available(&why)) return Status(StatusCode::Unsupported, "backend cuda is not available: " + why);
  return make_cuda_executor(image);
}

}  // namespace amk::vm
