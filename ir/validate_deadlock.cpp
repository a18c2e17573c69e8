// ir/validate_deadlock.cpp: witnesses for tasks that never fire (deadlock.cycle, queue.order).
// Each stuck task is "blocked by" one stuck task: a stuck producer of a wait its counter cannot
// meet, else its stuck SM-queue predecessor. Following blocked-by edges from any stuck task ends
// in a cycle (reported with every hop named) or at a wait.unsatisfiable wait (reported already).
// The walk is iterative with per-task states, so a million-deep chain costs one pass.
#include <string>

#include "ir/validate_checks.h"

namespace amk::ir::detail {

void check_deadlock(Context& cx, const Firing& f) {
  const Program& p = cx.program;
  const ProgramIndex& ix = cx.ix;
  int64_t n_stuck = 0;
  for (int32_t t = 0; t < ix.n_tasks; ++t) n_stuck += f.fired[t] ? 0 : 1;
  if (n_stuck == 0) return;

  // blocker[t] and the wait slot it came through (kNone: the SM queue).
  std::vector<int32_t> blocker(ix.n_tasks, kNone), via(ix.n_tasks, kNone);
  for (int32_t t = 0; t < ix.n_tasks; ++t) {
    if (f.fired[t]) continue;
    bool hopeless = false;  // a wait.unsatisfiable wait is the end of the chain (already reported)
    for (int32_t s = ix.wait_begin[t]; s < ix.wait_begin[t + 1]; ++s)
      hopeless |= ix.wait_counter[s] != kNone && ix.wait_threshold[s] > ix.producer_count(ix.wait_counter[s]);
    if (hopeless) continue;
    for (int32_t s = ix.wait_begin[t]; s < ix.wait_begin[t + 1] && blocker[t] == kNone; ++s) {
      const int32_t c = ix.wait_counter[s];
      if (c == kNone || ix.wait_threshold[s] < 1 || f.value[c] >= ix.wait_threshold[s]) continue;
      for (int32_t k = ix.prod_begin[c]; k < ix.prod_begin[c + 1]; ++k) {
        if (!f.fired[ix.prod[k]]) {
          blocker[t] = ix.prod[k];
          via[t] = s;
          break;
        }
      }
    }
    if (blocker[t] == kNone && ix.queue_prev[t] != kNone && !f.fired[ix.queue_prev[t]]) blocker[t] = ix.queue_prev[t];
  }

  std::vector<uint8_t> state(ix.n_tasks, 0);  // 0 new, 1 on the current path, 2 done
  std::vector<int32_t> path;
  bool first = true;
  for (int32_t start = 0; start < ix.n_tasks; ++start) {
    if (f.fired[start] || state[start] != 0) continue;
    path.clear();
    int32_t v = start;
    while (v != kNone && state[v] == 0) {
      state[v] = 1;
      path.push_back(v);
      v = blocker[v];
    }
    if (v != kNone && state[v] == 1) {
      size_t i0 = 0;
      while (path[i0] != v) ++i0;
      // Long cycles show their first 8 and last 3 hops; every hop still counts in the rule choice.
      const size_t len = path.size() - i0;
      auto shown = [&](size_t i) { return len <= 12 || i - i0 < 8 || path.size() - i <= 3; };
      std::string chain, hops;
      std::vector<int32_t> tasks, counters;
      bool queue_hop = false;
      for (size_t i = i0; i < path.size(); ++i) {
        const int32_t u = path[i], w = blocker[u];
        queue_hop |= via[u] == kNone;
        if (!shown(i)) {
          if (shown(i - 1)) chain += "... (" + std::to_string(len - 11) + " more tasks) -> ";
          continue;
        }
        chain += task_ref(p, u) + " -> ";
        tasks.push_back(u);
        if (!hops.empty()) hops += "; ";
        if (via[u] == kNone) {
          hops += task_ref(p, u) + " is queued on sm " + std::to_string(*p.tasks[u].sm) + " behind " + task_ref(p, w);
        } else {
          const int32_t c = ix.wait_counter[via[u]];
          counters.push_back(c);
          hops += task_ref(p, u) + " waits on " + counter_ref(p, c) + " >= " + std::to_string(ix.wait_threshold[via[u]]) +
                  " (it can only reach " + std::to_string(f.value[c]) + "), which " + task_ref(p, w) + " signals";
        }
      }
      chain += task_ref(p, v);
      std::string msg = first ? std::to_string(n_stuck) + (n_stuck == 1 ? " task" : " tasks") + " can never run. " : "";
      msg += "Witness cycle: " + chain + " (" + hops + ")";
      cx.sink.error(queue_hop ? "queue.order" : "deadlock.cycle", msg, tasks, {}, counters);
      first = false;
    }
    for (int32_t u : path) state[u] = 2;
  }
}

}  // namespace amk::ir::detail
