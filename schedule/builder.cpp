// schedule/builder.cpp: the stage-chain ProgramBuilder.
#include "schedule/builder.h"

#include <cassert>

namespace amk::schedule {

ir::BufferId ProgramBuilder::add_buffer(std::string name, ir::BufferKind kind, ir::DType dtype,
                                        std::vector<int64_t> shape, ir::MemSpace space,
                                        std::optional<std::string> source) {
  ir::Buffer b;
  b.id = ir::BufferId(static_cast<int32_t>(program_.buffers.size()));
  b.name = std::move(name);
  b.kind = kind;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.space = space;
  b.source = std::move(source);
  program_.buffers.push_back(std::move(b));
  return program_.buffers.back().id;
}

void ProgramBuilder::begin_stage(std::string note) {
  // An empty stage would leave its successors waiting on a counter nobody signals.
  assert(program_.counters.empty() || cur_stage_tasks_ > 0);
  prev_stage_tasks_ = cur_stage_tasks_;
  cur_stage_tasks_ = 0;
  ir::Counter c;
  c.id = ir::CounterId(static_cast<int32_t>(program_.counters.size()));
  c.note = std::move(note);
  program_.counters.push_back(std::move(c));
}

ir::TaskId ProgramBuilder::add_task(ir::Opcode op, std::vector<ir::BufferId> inputs,
                                    std::vector<ir::BufferId> outputs, ir::Params params, std::string label,
                                    int64_t est_bytes, int64_t est_flops) {
  assert(!program_.counters.empty());
  const int32_t stage = stage_count() - 1;
  ir::Task t;
  t.id = ir::TaskId(static_cast<int32_t>(program_.tasks.size()));
  t.op = op;
  t.inputs = std::move(inputs);
  t.outputs = std::move(outputs);
  t.out_counter = ir::CounterId(stage);
  if (stage > 0) t.waits.push_back(ir::Wait{ir::CounterId(stage - 1), prev_stage_tasks_});
  t.params = std::move(params);
  t.est_bytes = est_bytes;
  t.est_flops = est_flops;
  t.label = std::move(label);
  program_.tasks.push_back(std::move(t));
  task_stage_.push_back(stage);
  ++cur_stage_tasks_;
  return program_.tasks.back().id;
}

}  // namespace amk::schedule
