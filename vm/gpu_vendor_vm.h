// vm/gpu_vendor_vm.h: the entry points each GPU VM library hands the seam (vm/gpu_backends.cpp).
// One source defines both: vm/cuda/gpu_backends_cuda.cpp and vm/cuda/device_opcodes.cu are built
// as CudaVm into amk_vm_cuda (nvcc) and, with -DAMK_USE_HIP, as HipVm into amk_vm_hip (hipcc), so
// the two names differ and one binary can hold both VMs; vm/gpu_vendor_memory.cpp is built the same
// way. Only the seam and those sources include this header.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "loader/loader.h"
#include "vm/executor.h"

namespace amk::vm {

/// The CUDA VM (amk_vm_cuda); defined only in builds with AMK_CUDA.
struct CudaVm {
  /// True when a CUDA device is present; otherwise says why not (naming the runtime call).
  static bool available(std::string* why_not);
  /// A persistent-kernel executor over `image` (Unsupported without a device).
  static Result<std::unique_ptr<Executor>> make_executor(loader::ProgramImage& image);
  /// instructions::kDeviceOpcodes as nvcc compiled it (needs no device).
  static std::vector<int32_t> device_opcodes();
  /// cudaMemGetInfo on the current device: bytes free and total (vm/gpu_vendor_memory.cpp).
  static Status memory_info(uint64_t* free_bytes, uint64_t* total_bytes);
};

/// The HIP VM (amk_vm_hip); defined only in builds with AMK_HIP. Same contract as CudaVm.
struct HipVm {
  /// True when an AMD GPU is present; otherwise says why not (naming the runtime call).
  static bool available(std::string* why_not);
  /// A persistent-kernel executor over `image` (Unsupported without a device).
  static Result<std::unique_ptr<Executor>> make_executor(loader::ProgramImage& image);
  /// instructions::kDeviceOpcodes as hipcc compiled it (needs no device).
  static std::vector<int32_t> device_opcodes();
  /// hipMemGetInfo on the current device: bytes free and total (vm/gpu_vendor_memory.cpp).
  static Status memory_info(uint64_t* free_bytes, uint64_t* total_bytes);
};

}  // namespace amk::vm
