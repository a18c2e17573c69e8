// ir/graph.h: graph views of a program's counter protocol (IR spec sections 2 and 3.4).
// These assume referential integrity (validate() checks it first); references out of range are
// ignored rather than followed, so calling them on a broken program is safe but not meaningful.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

/// For every counter, each producer precedes every task that waits on it.
std::vector<std::pair<TaskId, TaskId>> dependency_edges(const Program& program);

/// Kahn's order over dependency_edges(); nullopt when they contain a cycle.
std::optional<std::vector<TaskId>> topological_order(const Program& program);

/// Static reachability: fire tasks whose waits are met (respecting per-SM queue order) until
/// nothing changes. `stuck` is non-empty iff some task can never run.
struct CounterSimulation {
  std::vector<TaskId> order;
  std::vector<TaskId> stuck;
};
CounterSimulation simulate_counters(const Program& program);

/// Fire tasks in `seeds` randomized interleavings (start and end events separate, so tasks
/// overlap); report every access that conflicts with an unfinished one and every transient read
/// whose writers had not all completed. Empty = no violation seen (evidence, not proof).
std::vector<std::string> simulate_adversarial(const Program& program, int seeds);

}  // namespace amk::ir
