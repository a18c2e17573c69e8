// vm/gpu_backends_none.cpp: the GPU seam for builds without a GPU VM.
#include "vm/gpu_backends.h"

namespace amk::vm {

bool cuda_available(std::string* why_not) {
  if (why_not != nullptr) *why_not = "this amk was built without the CUDA VM (AMK_CUDA=OFF or no nvcc at configure time)";
  return false;
}

bool hip_available(std::string* why_not) {
  if (why_not != nullptr) *why_not = "this amk was built without the HIP VM (AMK_HIP=OFF or no hipcc at configure time)";
  return false;
}

Result<std::unique_ptr<Executor>> make_gpu_executor(const std::string& backend, loader::ProgramImage&) {
  std::string why;
  if (backend == "cuda") cuda_available(&why); else hip_available(&why);
  return Status(StatusCode::Unsupported, "backend " + backend + " is not available: " + why);
}

}  // namespace amk::vm
