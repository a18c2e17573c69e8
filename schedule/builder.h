// schedule/builder.h: appends buffers and tasks to a Program as a chain of stages (internal).
// A stage is a set of tasks that may run concurrently: they share one counter, and every task of
// stage s waits on stage s-1's counter with threshold = its task count (an all-join). So each
// task is ordered after every task of every earlier stage, and the program is deadlock- and
// race-free by construction as long as the tasks inside one stage touch disjoint data.
// Stage s signals counter s, so a stage index is also a counter id.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace amk::schedule {

class ProgramBuilder {
 public:
  /// Append a buffer; ids are dense in call order.
  ir::BufferId add_buffer(std::string name, ir::BufferKind kind, ir::DType dtype, std::vector<int64_t> shape,
                          ir::MemSpace space = ir::MemSpace::Hbm, std::optional<std::string> source = std::nullopt);
  const ir::Buffer& buffer(ir::BufferId id) const { return program_.buffers[static_cast<size_t>(id.value)]; }
  ir::Buffer& buffer_mut(ir::BufferId id) { return program_.buffers[static_cast<size_t>(id.value)]; }
  int64_t buffer_bytes(ir::BufferId id) const { return buffer(id).nbytes(); }

  /// Close the current stage (if any) and open a new one whose counter note is `note`.
  void begin_stage(std::string note);
  /// Append a task to the current stage. A stage must have been begun.
  ir::TaskId add_task(ir::Opcode op, std::vector<ir::BufferId> inputs, std::vector<ir::BufferId> outputs,
                      ir::Params params, std::string label, int64_t est_bytes, int64_t est_flops);

  /// Stage index of every task, by task id (the liveness clock of the page allocator).
  const std::vector<int32_t>& task_stage() const { return task_stage_; }
  int32_t stage_count() const { return static_cast<int32_t>(program_.counters.size()); }

  ir::Program& program() { return program_; }
  /// Hand the program over; the builder is empty afterwards.
  ir::Program take() { return std::move(program_); }

 private:
  ir::Program program_;
  std::vector<int32_t> task_stage_;
  int64_t prev_stage_tasks_ = 0;  ///< tasks in the stage before the current one
  int64_t cur_stage_tasks_ = 0;
};

}  // namespace amk::schedule
