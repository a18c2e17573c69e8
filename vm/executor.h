// vm/executor.h: the interface every VM implements (CPU threads, CUDA, HIP): run one launch
// (one decode step) of a loaded image under a watchdog deadline, and move buffer contents.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/status.h"
#include "loader/loader.h"
#include "vm/abi.h"
#include "vm/trace.h"

namespace amk::vm {

struct LaunchOptions {
  /// After this long the launch is aborted and reported as Timeout naming the unfinished tasks.
  std::chrono::milliseconds deadline{30000};
  /// Tracing on when set: the executor fills one TaskTiming per task (vm/trace.h). Only pass it to
  /// an executor whose supports_trace() is true; the others ignore it.
  LaunchTrace* trace = nullptr;
};

/// Per-launch measurements.
struct LaunchStats {
  double wall_us = 0.0;
  /// GPU backends: the persistent kernel alone, from stream events around it; -1 elsewhere.
  double device_us = -1.0;
  /// CPU VM: waits that outlasted their spin and parked a worker; -1 elsewhere.
  int64_t parked_waits = -1;
};

class Executor {
 public:
  virtual ~Executor() = default;
  /// "cpu", "cuda", "hip".
  virtual std::string name() const = 0;
  /// Run every task once with `pos` as the step position. Timeout leaves the executor usable.
  virtual Status launch(int32_t pos, const LaunchOptions& options, LaunchStats* stats) = 0;
  /// Copy `bytes` from buffer `index` (host view for the CPU; device memory for GPUs).
  virtual Status read_buffer(int32_t index, void* dst, size_t bytes) = 0;
  /// Copy `bytes` into buffer `index`.
  virtual Status write_buffer(int32_t index, const void* src, size_t bytes) = 0;
  /// Zero KV caches, activations, IO buffers and counters (a fresh sequence).
  virtual Status reset_state() = 0;
  /// Whether launch() fills LaunchOptions::trace. A GPU backend overrides this once its kernel
  /// records TaskTiming from the device timer.
  virtual bool supports_trace() const { return false; }
};

}  // namespace amk::vm
