// vm/gpu_backends.h: the seam between the Session and the GPU VMs, which exist only in builds
// with CUDA (issue 5) or HIP (issue 7). Without them these report "not built" cleanly.
#pragma once
#include <memory>
#include <string>

#include "ir/status.h"
#include "vm/executor.h"

namespace amk::vm {

/// True when this build has the CUDA VM and a CUDA device is present; otherwise says why not.
bool cuda_available(std::string* why_not);
/// True when this build has the HIP VM and an AMD GPU is present; otherwise says why not.
bool hip_available(std::string* why_not);
/// An executor for "cuda" or "hip" over `image` (Unsupported when not built or no device).
Result<std::unique_ptr<Executor>> make_gpu_executor(const std::string& backend, loader::ProgramImage& image);

}  // namespace amk::vm
