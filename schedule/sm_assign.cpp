// schedule/sm_assign.cpp: round-robin, greedy byte balancing (whole program or per stage), and
// explicit SM maps.
#include "schedule/sm_assign.h"

#include <functional>
#include <map>
#include <tuple>
#include <queue>
#include <utility>
#include <vector>

namespace amk::schedule {
namespace {

Status invalid(const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); }

Status assign_explicit(ir::Program& p, const std::map<int64_t, int64_t>& map, const ir::GpuTarget& t) {
  if (t.num_sms <= 0) {
    return invalid("sm_assignment: an explicit {task_id: sm} map needs a target with SMs; target '" + t.name +
                   "' has num_sms 0 (use a named policy, which leaves sm unassigned there)");
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

// Per stage: a stage is the tasks that release one counter (q/k/v of a layer, its attention
// heads, ...), and at decode the stages run one after another, so what decides a stage's time is
// its most loaded SM. load_balance evens bytes over the whole program instead: an SM that had no
// task in one stage (128 down_proj tiles on 132 SMs) gets two or three in the next one. Here each
// task goes to the SM with the fewest bytes in its own stage, then the fewest tasks in it (tasks
// without bytes spread too), then the fewest bytes so far, then the lowest index.
//
// With fast SMs (ScheduleConfig::fast_sms, docs/SM_BALANCE.md) bytes are weighed by each SM's
// capacity (fast_sm_ratio for SMs [0, fast_sms), 1 for the rest): a task goes to the SM on which
// its stage would end first counting it, (stage bytes + task bytes) / capacity, then as above
// with the bytes so far weighed the same way. A stage's wide tiles come first, so they go to the
// fast SMs in every stage, and the narrow ones fill the rest. With every capacity 1 the order is
// exactly the unweighted one.
//
// Only a stage with at least one task per SM is weighed. A smaller stage (k / v, the attention
// heads, a 128-tile o_proj on 132 SMs) gives every task an SM of its own either way, so weighing
// it cannot end it sooner by more than the ratio on one task; what it does instead is put the
// first tasks of every such stage on the same fast SMs, layer after layer, where the unweighted
// tie-break on the bytes so far staggers them. (On an H100 the two rules ran alike, row 212.)
void assign_stage_balance(ir::Program& p, int64_t num_sms, int64_t fast_sms, double fast_ratio) {
  struct StageLoad {
    std::vector<int64_t> bytes, tasks;
    bool weighed = false;  ///< a task for every SM: fast SMs count fast_ratio times
  };
  const auto n = static_cast<size_t>(num_sms);
  // Each task's stage: its out counter, or a stage of its own (negative keys) without one.
  std::vector<int64_t> keys(p.tasks.size());
  std::map<int64_t, size_t> stage_tasks;
  for (size_t i = 0, lone = 0; i < p.tasks.size(); ++i) {
    const int64_t counter = p.tasks[i].out_counter.value;
    keys[i] = counter >= 0 ? counter : -static_cast<int64_t>(++lone);
    ++stage_tasks[keys[i]];
  }
  std::vector<int64_t> total(n, 0);
  std::map<int64_t, StageLoad> stages;  // out counter -> load in that stage
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    ir::Task& task = p.tasks[i];
    StageLoad& st = stages[keys[i]];
    if (st.bytes.empty()) {
      st.bytes.assign(n, 0);
      st.tasks.assign(n, 0);
      st.weighed = stage_tasks.at(keys[i]) >= n;
    }
    const auto capacity = [&](size_t sm) {
      return st.weighed && static_cast<int64_t>(sm) < fast_sms ? fast_ratio : 1.0;
    };
    const auto end_of = [&](size_t sm) { return static_cast<double>(st.bytes[sm] + task.est_bytes) / capacity(sm); };
    const auto so_far = [&](size_t sm) { return static_cast<double>(total[sm]) / capacity(sm); };
    size_t best = 0;
    for (size_t sm = 1; sm < n; ++sm) {
      const double end = end_of(sm), best_end = end_of(best), was = so_far(sm), best_was = so_far(best);
      if (std::tie(end, st.tasks[sm], was) < std::tie(best_end, st.tasks[best], best_was)) best = sm;
    }
    task.sm = static_cast<int32_t>(best);
    st.bytes[best] += task.est_bytes;
    st.tasks[best] += 1;
    total[best] += task.est_bytes;
  }
}

}  // namespace

bool is_sm_policy(const std::string& name) {
  for (const char* known : kSmPolicies)
    if (name == known) return true;
  return false;
}

Status unknown_sm_policy(const std::string& name) {
  std::string known;
  for (const char* k : kSmPolicies) known += std::string("\"") + k + "\", ";
  return invalid("sm_assignment: \"" + name + "\" is not one of " + known + "or a {task_id: sm} map");
}

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
  if (policy == "stage_balance") {
    assign_stage_balance(p, t.num_sms, config.fast_sms, config.fast_sm_ratio);
    return Status::ok();
  }
  return unknown_sm_policy(policy);
}

}  // namespace amk::schedule
