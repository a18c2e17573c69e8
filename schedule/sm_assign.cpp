// schedule/sm_assign.cpp: round-robin, greedy byte balancing, and explicit SM maps.
#include "schedule/sm_assign.h"

#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace amk::schedule {
namespace {

Status invalid(const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); }

Status assign_explicit(ir::Program& p, const std::map<int64_t, int64_t>& map, const ir::GpuTarget& t) {
  if (t.num_sms <= 0) {
    return invalid("sm_assignment: an explicit {task_id: sm} map needs a target with SMs; target '" + t.name +
                   "' has num_sms 0 (use \"round_robin\" or \"load_balance\", which leave sm unassigned there)");
  }
  const int64_t n = static_cast<int64_t>(p.tasks.size());
  for (const auto& [task, sm] : map) {
    const std::string where = "sm_assignment[\"" + std::to_string(task) + "\"]";
    if (task < 0 || task >= n) {
      return invalid(where + ": no such task (the program has " + std::to_string(n) + " tasks, ids 0.." +
                     std::to_string(n - 1) + ")");
    }
    if (sm < 0 || sm >= t.num_sms) {
      return invalid(where + ": sm " + std::to_string(sm) + " is outside [0, " + std::to_string(t.num_sms) +
                     ") (target '" + t.name + "' num_sms)");
    }
  }
  for (ir::Task& task : p.tasks) {
    auto it = map.find(task.id.value);
    if (it == map.end()) {
      return invalid("sm_assignment: task " + std::to_string(task.id.value) + " (" + task.label +
                     ") is not listed; an explicit map must list every one of the " + std::to_string(n) + " tasks");
    }
    task.sm = static_cast<int32_t>(it->second);
  }
  return Status::ok();
}

void assign_load_balance(ir::Program& p, int64_t num_sms) {
  // Min-heap of (bytes assigned so far, sm): the pair order breaks ties toward the lower SM.
  using Slot = std::pair<int64_t, int32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> heap;
  for (int32_t sm = 0; sm < num_sms; ++sm) heap.push({0, sm});
  for (ir::Task& task : p.tasks) {
    Slot s = heap.top();
    heap.pop();
    task.sm = s.second;
    s.first += task.est_bytes;
    heap.push(s);
  }
}

}  // namespace

Status assign_sms(ir::Program& p, const ir::ScheduleConfig& config, const ir::GpuTarget& t) {
  if (const auto* map = std::get_if<std::map<int64_t, int64_t>>(&config.sm_assignment)) {
    return assign_explicit(p, *map, t);
  }
  const std::string& policy = std::get<std::string>(config.sm_assignment);
  if (t.num_sms <= 0) {
    for (ir::Task& task : p.tasks) task.sm.reset();
    return Status::ok();
  }
  if (policy == "round_robin") {
    for (size_t i = 0; i < p.tasks.size(); ++i) p.tasks[i].sm = static_cast<int32_t>(i % t.num_sms);
    return Status::ok();
  }
  if (policy == "load_balance") {
    assign_load_balance(p, t.num_sms);
    return Status::ok();
  }
  return invalid("sm_assignment: \"" + policy + "\" is not \"round_robin\", \"load_balance\" or a {task_id: sm} map");
}

}  // namespace amk::schedule
