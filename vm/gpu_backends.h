// vm/gpu_backends.h: the seam between the Session and the GPU VMs. The CUDA VM (issue 5) and the
// HIP VM (issue 7) are separate build options that may both be on; a backend that is not built,
// or has no device, reports why cleanly (docs/HIP.md).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "vm/executor.h"

namespace amk::vm {

/// True when this build has the CUDA VM and a CUDA device is present; otherwise says why not.
bool cuda_available(std::string* why_not);
/// True when this build has the HIP VM and an AMD GPU is present; otherwise says why not.
bool hip_available(std::string* why_not);
/// True when this build contains the VM for `backend` ("cuda" or "hip"), device or not.
bool gpu_backend_built(const std::string& backend);
/// An executor for "cuda" or "hip" over `image` (Unsupported when not built or no device).
Result<std::unique_ptr<Executor>> make_gpu_executor(const std::string& backend, loader::ProgramImage& image);
/// The opcodes the device dispatch of `backend` handles, as that backend's compiler built it
/// (needs no device); Unsupported when this build lacks that backend.
Result<std::vector<int32_t>> gpu_device_opcodes(const std::string& backend);

}  // namespace amk::vm
