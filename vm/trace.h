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

/// One chunk of the sm_90 weight stream (vm/cuda/persistent_kernel.cu) in one traced launch: the
/// loader issued its bulk copy at t_issue; the compute warps began waiting for it at t_wait, saw
/// it landed at t_ready (= t_wait when it had landed before they looked) and had consumed it, its
/// ring slot free again, at t_done. So t_ready - t_wait is time the arithmetic stood still for
/// HBM, t_done - t_ready the chunk's arithmetic, and a slot's next t_issue minus this t_done the
/// loader's refill delay. Records of chunks that were not consumed keep t_done == 0.
struct ChunkTiming {
  int32_t queue_slot = -1;  ///< sm_queue index of the task whose weight bytes it holds
  uint32_t bytes = 0;
  uint64_t t_issue = 0;
  uint64_t t_wait = 0;
  uint64_t t_ready = 0;
  uint64_t t_done = 0;
};
static_assert(sizeof(ChunkTiming) == 40, "ChunkTiming is shared with device code: keep it 40 bytes");

/// What an executor fills for one traced launch. The caller owns it and passes it through
/// LaunchOptions::trace; the executor sizes `records` (before timing starts) to the total queue
/// length and writes slot q for sm_queue[q].
struct LaunchTrace {
  int32_t pos = 0;               ///< the step position of this launch
  std::string clock;             ///< "steady_clock" (CPU) or e.g. "globaltimer" (CUDA)
  uint64_t t_launch_begin = 0;   ///< host view of the launch, same clock as the records when possible
  uint64_t t_launch_end = 0;
  std::vector<TaskTiming> records;
  /// The weight stream's chunks, when the launch streamed weights through a ring (else empty):
  /// worker w's n-th chunk, in stream order, is chunks[w * chunks_per_worker + n].
  int32_t chunks_per_worker = 0;
  int32_t ring_slots = 0;  ///< chunk n went into ring slot n % ring_slots
  std::vector<ChunkTiming> chunks;
  /// Worker w's block ran on the SM whose hardware id is worker_sm[w] (CUDA %smid, read when the
  /// block started), one entry per worker; empty where the backend does not know (the CPU VM,
  /// HIP). Blocks are placed on SMs afresh at each launch, and some SMs get a larger share of HBM
  /// bandwidth than others (docs/PERFORMANCE.md row 210): this says which worker had which.
  std::vector<int32_t> worker_sm;
};

}  // namespace amk::vm
