// vm/cpu_vm.h: the CPU VM, the embedded default and the numerics oracle for the GPU. One thread
// per worker (virtual SM) walks its queue, waiting on the same monotonic counters with acquire
// loads and signalling with release increments, exactly the GPU protocol.
#pragma once
#include <chrono>
#include <memory>

#include "vm/executor.h"

namespace amk::vm {

struct CpuVmOptions {
  /// The longest an unmet wait spins before its worker parks on a condition variable. Each
  /// worker adapts its window between 2 us and this (halved when a spin runs out, doubled when
  /// one succeeds), so a worker whose producer cannot run gives its core back within microseconds.
  /// 200 us measured best on 2 cores with and without busy loops beside (docs/STATUS.md, session
  /// 28). Zero parks at once (tests).
  std::chrono::nanoseconds spin_before_park{std::chrono::microseconds(200)};
};

/// A CPU executor over `image` (which must outlive it). The thread that calls launch() runs worker
/// 0's queue; the other workers' threads are created once and parked between launches.
std::unique_ptr<Executor> make_cpu_executor(loader::ProgramImage& image, const CpuVmOptions& options = {});

}  // namespace amk::vm
