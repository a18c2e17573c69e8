// ir/validate_index.cpp: builds the position indexes of validate_index.h and runs the counter
// protocol once (the exact deadlock decision: counters only grow, so firing never disables a task
// and one maximal run completes exactly the completable tasks).
#include "ir/validate_index.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace amk::ir::detail {
namespace {

// CSR from (key, value) pairs given as a key per value; values keep their input order.
void build_csr(int32_t n_keys, const std::vector<int32_t>& key_of, std::vector<int32_t>& begin,
               std::vector<int32_t>& values) {
  begin.assign(n_keys + 1, 0);
  for (int32_t k : key_of)
    if (k >= 0) ++begin[k + 1];
  for (int32_t i = 1; i <= n_keys; ++i) begin[i] += begin[i - 1];
  values.assign(begin.back(), 0);
  std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < key_of.size(); ++i)
    if (key_of[i] >= 0) values[fill[key_of[i]]++] = static_cast<int32_t>(i);
}

}  // namespace

ProgramIndex build_index(const Program& program) {
  ProgramIndex ix;
  ix.program = &program;
  ix.n_tasks = static_cast<int32_t>(program.tasks.size());
  ix.n_counters = static_cast<int32_t>(program.counters.size());
  ix.buffer_of_id = id_positions(program.buffers);
  ix.counter_of_id = id_positions(program.counters);
  if (program.pages) ix.page_of_id = id_positions(program.pages->pages);

  const int32_t n = ix.n_tasks;
  ix.task_out.resize(n);
  ix.wait_begin.assign(n + 1, 0);
  for (int32_t t = 0; t < n; ++t) {
    const Task& task = program.tasks[t];
    ix.task_out[t] = position_of(ix.counter_of_id, task.out_counter);
    ix.wait_begin[t + 1] = ix.wait_begin[t] + static_cast<int32_t>(task.waits.size());
  }
  build_csr(ix.n_counters, ix.task_out, ix.prod_begin, ix.prod);

  const int32_t n_waits = ix.wait_begin.back();
  ix.wait_counter.resize(n_waits);
  ix.wait_threshold.resize(n_waits);
  ix.wait_task.resize(n_waits);
  for (int32_t t = 0; t < n; ++t) {
    int32_t slot = ix.wait_begin[t];
    for (const Wait& w : program.tasks[t].waits) {
      ix.wait_counter[slot] = position_of(ix.counter_of_id, w.counter);
      ix.wait_threshold[slot] = w.threshold;
      ix.wait_task[slot++] = t;
    }
  }
  build_csr(ix.n_counters, ix.wait_counter, ix.waiter_begin, ix.waiter_slot);

  // SM queues: task-list order filtered by sm. Small sm values use a table, others a map.
  ix.queue_prev.assign(n, kNone);
  ix.queue_next.assign(n, kNone);
  std::vector<int32_t> last_small(4096, kNone);
  std::unordered_map<int32_t, int32_t> last_big;
  for (int32_t t = 0; t < n; ++t) {
    const auto& sm = program.tasks[t].sm;
    if (!sm) continue;
    int32_t* last = nullptr;
    if (*sm >= 0 && *sm < static_cast<int32_t>(last_small.size())) {
      last = &last_small[*sm];
    } else {
      auto it = last_big.try_emplace(*sm, kNone).first;
      last = &it->second;
    }
    if (*last != kNone) {
      ix.queue_prev[t] = *last;
      ix.queue_next[*last] = t;
    }
    *last = t;
  }
  return ix;
}

Firing fire_all(const ProgramIndex& ix) {
  const int32_t n = ix.n_tasks;
  Firing f;
  f.fired.assign(n, 0);
  f.value.assign(ix.n_counters, 0);

  // Per counter, its wait slots sorted by threshold, so an increment satisfies a prefix.
  std::vector<int32_t> sorted = ix.waiter_slot;
  const auto& thr = ix.wait_threshold;
  for (int32_t c = 0; c < ix.n_counters; ++c)
    std::sort(sorted.begin() + ix.waiter_begin[c], sorted.begin() + ix.waiter_begin[c + 1],
              [&](int32_t x, int32_t y) { return thr[x] < thr[y]; });
  std::vector<int32_t> next_slot(ix.waiter_begin.begin(), ix.waiter_begin.end() - 1);
  for (int32_t c = 0; c < ix.n_counters; ++c)  // thresholds < 1 are met at launch
    while (next_slot[c] < ix.waiter_begin[c + 1] && thr[sorted[next_slot[c]]] < 1) ++next_slot[c];

  std::vector<int32_t> pending(n, 0);
  std::deque<int32_t> ready;
  for (int32_t t = 0; t < n; ++t) {
    int32_t p = ix.queue_prev[t] != kNone ? 1 : 0;
    for (int32_t s = ix.wait_begin[t]; s < ix.wait_begin[t + 1]; ++s)
      if (ix.wait_counter[s] == kNone || thr[s] >= 1) ++p;  // a dangling wait is never met
    pending[t] = p;
    if (p == 0) ready.push_back(t);
  }
  auto release = [&](int32_t t) {
    if (--pending[t] == 0) ready.push_back(t);
  };
  f.order.reserve(n);
  while (!ready.empty()) {
    const int32_t t = ready.front();
    ready.pop_front();
    f.fired[t] = 1;
    f.order.push_back(t);
    if (const int32_t c = ix.task_out[t]; c != kNone) {
      const int64_t v = ++f.value[c];
      for (int32_t& k = next_slot[c]; k < ix.waiter_begin[c + 1] && thr[sorted[k]] <= v; ++k)
        release(ix.wait_task[sorted[k]]);
    }
    if (ix.queue_next[t] != kNone) release(ix.queue_next[t]);
  }
  return f;
}

}  // namespace amk::ir::detail
