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
/// Device memory of a GPU backend's current device, from the runtime's free/total query.
struct GpuMemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
  /// total - free: what every process (not only this one) holds on the device.
  uint64_t used_bytes() const { return total_bytes - free_bytes; }
};
/// cudaMemGetInfo ("cuda") or hipMemGetInfo ("hip") on the current device (the one a Session of
/// that backend runs on). Unsupported when this build lacks the backend or there is no device;
/// GpuRuntime when the query fails.
Result<GpuMemoryInfo> gpu_memory_info(const std::string& backend);
/// The opcodes the device dispatch of `backend` handles, as that backend's compiler built it
/// (needs no device); Unsupported when this build lacks that backend.
Result<std::vector<int32_t>> gpu_device_opcodes(const std::string& backend);

}  // namespace amk::vm
