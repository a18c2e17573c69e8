// vm/cpu_vm.h: the CPU VM, the embedded default and the numerics oracle for the GPU. One thread
// per worker (virtual SM) walks its queue, waiting on the same monotonic counters with acquire
// loads and signalling with release increments, exactly the GPU protocol.
#pragma once
#include <memory>

#include "vm/executor.h"

namespace amk::vm {

/// A CPU executor over `image` (which must outlive it). Threads are created once and parked
/// between launches.
std::unique_ptr<Executor> make_cpu_executor(loader::ProgramImage& image);

}  // namespace amk::vm
