// vm/trace.h: per-task timing records of one launch, the data behind `amk-run --trace`.
// A record is a C POD so a GPU backend can fill it in device memory (from its global timer) and
// copy it back unchanged; the CPU VM fills it from std::chrono::steady_clock. Records are indexed
// by queue slot (sm_queue order), so each worker writes only its own contiguous slice: no sharing,
// no atomics, no allocation while the launch runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace amk::vm {

/// One task in one launch. Times are nanoseconds on the backend's clock (LaunchTrace::clock).
/// Invariant for a task that ran: t_wait_begin <= t_run_begin <= t_end, and t_end is taken
/// *before* the task's release increment, so a consumer's t_run_begin >= its producers' t_end.
/// A task that never ran (timeout, abort) has t_end == 0.
struct TaskTiming {
  int32_t task = -1;          ///< instruction index (= position in the program's task list)
  int32_t worker = -1;        ///< worker / SM that ran it
  uint64_t t_wait_begin = 0;  ///< started waiting on its counters
  uint64_t t_run_begin = 0;   ///< every wait was met; the micro-kernel starts
  uint64_t t_end = 0;         ///< outputs written, before signalling out_counter
};
static_assert(sizeof(TaskTiming) == 32, "TaskTiming is shared with device code: keep it 32 bytes");

/// What an executor fills for one traced launch. The caller owns it and passes it through
/// LaunchOptions::trace; the executor sizes `records` (before timing starts) to the total queue
/// length and writes slot q for sm_queue[q].
struct LaunchTrace {
  int32_t pos = 0;               ///< the step position of this launch
  std::string clock;             ///< "steady_clock" (CPU) or e.g. "globaltimer" (CUDA)
  uint64_t t_launch_begin = 0;   ///< host view of the launch, same clock as the records when possible
  uint64_t t_launch_end = 0;
  std::vector<TaskTiming> records;
};

}  // namespace amk::vm
