// vm/cuda/cuda_executor.h: the GPU VM's executor (CUDA; the same source builds for HIP). It copies
// a ProgramImage to the device once (weights, KV caches, activations with their shared pages,
// instruction table, queues), then each launch uploads only the step block and runs the
// persistent kernel under a host watchdog. Timeout and device errors name the task, exactly like
// the CPU VM, and leave the executor usable.
#pragma once
#include <memory>
#include <string>

#include "ir/status.h"
#include "loader/loader.h"
#include "vm/executor.h"

namespace amk::vm {

/// Knobs of the GPU executor (defaults are what a Session uses).
struct GpuOptions {
  /// GEMV weight tiles warmed into L2 ahead of the running task: -1 = the program's
  /// config.pipelining_depth (2 when absent), 0 = off. The env var AMK_PREFETCH=0 also turns it off.
  int prefetch_depth = -1;
};

/// Resources of the compiled persistent kernel as launched for one image.
struct GpuKernelReport {
  std::string device;
  int workers = 0, sm_count = 0, blocks_per_sm = 0, threads_per_block = 0;
  int regs_per_thread = 0, local_bytes_per_thread = 0, static_smem_bytes = 0, dyn_smem_bytes = 0;
  int prefetch_depth = 0;
  /// One line for logs.
  std::string summary() const;
};

/// A GPU executor over `image` (which must outlive it). Unsupported when the workers cannot all be
/// co-resident (a persistent grid would deadlock) or the device lacks cooperative launch.
Result<std::unique_ptr<Executor>> make_cuda_executor(loader::ProgramImage& image, const GpuOptions& options = {});

/// The kernel report of an executor made by make_cuda_executor (nullptr for other executors).
const GpuKernelReport* gpu_kernel_report(const Executor& executor);

/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", or why there is none.
std::string cuda_device_name();

}  // namespace amk::vm
