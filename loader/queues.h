// loader/queues.h: per-worker task queues (internal to amk_loader; tests inspect them through
// ProgramImage::queue_offsets_ / queue_).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::loader {

/// Most workers a load may ask for (a sanity bound; real GPUs have a few hundred SMs).
inline constexpr int kMaxWorkers = 1 << 16;

struct WorkerQueues {
  int workers = 1;
  std::vector<int32_t> offsets;    ///< workers + 1 entries: worker w runs queue[offsets[w], offsets[w+1])
  std::vector<int32_t> queue;      ///< task ids
  std::vector<int32_t> worker_of;  ///< per task id
};

/// W = `requested` when > 0, else (max assigned sm + 1), else 1. A task with sm s runs on worker
/// s % W, unassigned tasks round-robin; each worker's tasks are ordered by their position in
/// ir::simulate_counters(program).order (tasks missing from it, i.e. stuck ones in programs loaded
/// through the test hook, go last in task-list order). InvalidArgument for requested < 0 or too big.
Result<WorkerQueues> build_queues(const ir::Program& program, int requested);

}  // namespace amk::loader
