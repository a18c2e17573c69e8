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

namespace amk::vm {

struct LaunchOptions {
  /// After this long the launch is aborted and reported as Timeout naming the unfinished tasks.
  std::chrono::milliseconds deadline{30000};
};

/// Per-launch measurements.
struct LaunchStats {
  double wall_us = 0.0;
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
};

}  // namespace amk::vm
