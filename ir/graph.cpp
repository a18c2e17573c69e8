// ir/graph.cpp: dependency edges, Kahn's topological order and the counter simulation (IR spec
// sections 2 and 3.4). Dangling references are skipped: a wait on a missing counter has no
// producer edge and is never met by the simulation. simulate_adversarial lives in hb_adversarial.cpp.
#include "ir/graph.h"

#include <deque>

#include "ir/validate_index.h"

namespace amk::ir {

using detail::kNone;

std::vector<std::pair<TaskId, TaskId>> dependency_edges(const Program& program) {
  const detail::ProgramIndex ix = detail::build_index(program);
  std::vector<std::pair<TaskId, TaskId>> edges;
  for (int32_t b = 0; b < ix.n_tasks; ++b) {
    for (int32_t s = ix.wait_begin[b]; s < ix.wait_begin[b + 1]; ++s) {
      const int32_t c = ix.wait_counter[s];
      if (c == kNone) continue;
      for (int32_t k = ix.prod_begin[c]; k < ix.prod_begin[c + 1]; ++k)
        edges.emplace_back(program.tasks[ix.prod[k]].id, program.tasks[b].id);
    }
  }
  return edges;
}

std::optional<std::vector<TaskId>> topological_order(const Program& program) {
  // Kahn over tasks and counters: a counter is "done" once all its producers are, and a task is
  // ready once every counter it waits on is done. This is Kahn over dependency_edges() without
  // materialising producers x waiters.
  const detail::ProgramIndex ix = detail::build_index(program);
  std::vector<int32_t> producers_left(ix.n_counters);
  for (int32_t c = 0; c < ix.n_counters; ++c) producers_left[c] = ix.producer_count(c);
  std::vector<int32_t> waits_left(ix.n_tasks, 0);
  for (int32_t s = 0; s < static_cast<int32_t>(ix.wait_counter.size()); ++s) {
    const int32_t c = ix.wait_counter[s];
    if (c != kNone && producers_left[c] > 0) ++waits_left[ix.wait_task[s]];
  }
  std::deque<int32_t> ready;
  for (int32_t t = 0; t < ix.n_tasks; ++t)
    if (waits_left[t] == 0) ready.push_back(t);
  std::vector<TaskId> order;
  order.reserve(ix.n_tasks);
  while (!ready.empty()) {
    const int32_t t = ready.front();
    ready.pop_front();
    order.push_back(program.tasks[t].id);
    const int32_t c = ix.task_out[t];
    if (c == kNone || --producers_left[c] != 0) continue;
    for (int32_t k = ix.waiter_begin[c]; k < ix.waiter_begin[c + 1]; ++k) {
      const int32_t w = ix.wait_task[ix.waiter_slot[k]];
      if (--waits_left[w] == 0) ready.push_back(w);
    }
  }
  if (static_cast<int32_t>(order.size()) != ix.n_tasks) return std::nullopt;
  return order;
}

CounterSimulation simulate_counters(const Program& program) {
  const detail::ProgramIndex ix = detail::build_index(program);
  const detail::Firing f = detail::fire_all(ix);
  CounterSimulation sim;
  sim.order.reserve(f.order.size());
  for (int32_t t : f.order) sim.order.push_back(program.tasks[t].id);
  for (int32_t t = 0; t < ix.n_tasks; ++t)
    if (!f.fired[t]) sim.stuck.push_back(program.tasks[t].id);
  return sim;
}

}  // namespace amk::ir
