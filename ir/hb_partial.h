// ir/hb_partial.h: the solver for happens-before edges that partial waits and counter cycles
// imply (internal; shared by hb_partial.cpp and hb_cycles.cpp). See hb_partial.cpp for the math.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/hb_graph.h"

namespace amk::ir::detail {

class Partial {
 public:
  Partial(const ProgramIndex& ix, const HbGraph& g, DerivedEdges& d)
      : ix_(ix), g_(g), d_(d), n_(ix.n_tasks), seen_(ix.n_tasks + ix.n_counters, 0), mark_(ix.n_tasks + ix.n_counters, 0),
        count_(ix.n_tasks, 0) {}

  void run();

 private:
  bool live(int32_t t) const { return t != kNone && g_.completable[t]; }
  bool counts(int32_t slot) const {  // a wait that constrains a completable task
    return ix_.wait_counter[slot] != kNone && ix_.wait_threshold[slot] >= 1 && g_.completable[ix_.wait_task[slot]];
  }
  template <typename F> void ancestors(int32_t start, F&& on_task);
  template <typename F> void task_preds(int32_t v, F&& f);
  int32_t d_next(int32_t v, int32_t& k) const;
  std::vector<std::vector<int32_t>> components();
  void lone_task(int32_t b);
  void add_maxima(const std::vector<int32_t>& set, int32_t b);
  void component(const std::vector<int32_t>& tasks);  // hb_cycles.cpp

  const ProgramIndex& ix_;
  const HbGraph& g_;
  DerivedEdges& d_;
  int32_t n_;
  std::vector<uint32_t> seen_, mark_;  // generation stamps over nodes
  uint32_t seen_gen_ = 0, mark_gen_ = 0;
  std::vector<int32_t> count_, stack_;
};

// Direct hb predecessors of node v as the graph stands (derived edges so far included).
template <typename F>
void Partial::task_preds(int32_t v, F&& f) {
  if (v >= n_) {
    const int32_t c = v - n_;
    for (int32_t k = ix_.prod_begin[c]; k < ix_.prod_begin[c + 1]; ++k)
      if (g_.completable[ix_.prod[k]]) f(ix_.prod[k]);
    return;
  }
  if (ix_.queue_prev[v] != kNone) f(ix_.queue_prev[v]);
  for (int32_t s = ix_.wait_begin[v]; s < ix_.wait_begin[v + 1]; ++s)
    if (counts(s) && !g_.wait_partial[s]) f(n_ + ix_.wait_counter[s]);
  for (int32_t e = d_.head[v]; e != kNone; e = d_.next[e]) f(d_.src[e]);
}

// Every task of Pre*(start), start included (iterative; depth never matters).
template <typename F>
void Partial::ancestors(int32_t start, F&& on_task) {
  ++seen_gen_;
  stack_.assign(1, start);
  seen_[start] = seen_gen_;
  while (!stack_.empty()) {
    const int32_t v = stack_.back();
    stack_.pop_back();
    if (v < n_) on_task(v);
    task_preds(v, [&](int32_t u) {
      if (seen_[u] != seen_gen_) {
        seen_[u] = seen_gen_;
        stack_.push_back(u);
      }
    });
  }
}

}  // namespace amk::ir::detail
