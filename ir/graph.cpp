// ir/graph.cpp: STUB, to be replaced.
#include "ir/graph.h"
namespace amk::ir {
std::vector<std::pair<TaskId, TaskId>> dependency_edges(const Program&) { return {}; }
std::optional<std::vector<TaskId>> topological_order(const Program&) { return std::nullopt; }
CounterSimulation simulate_counters(const Program&) { return {}; }
std::vector<std::string> simulate_adversarial(const Program&, int) { return {"not implemented"}; }
}  // namespace amk::ir
