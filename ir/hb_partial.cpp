// ir/hb_partial.cpp: happens-before edges implied by partial waits (1 <= t < N) and by counter
// cycles (docs/VALIDATION.md, "Exact happens-before"). Pre = the greatest solution of
//   Pre(B) = U_waits {A : #{p in producers(c) : A in Pre*(p)} >= N - t + 1} U Pre*(queue pred of B),
// found per strongly connected component of the producer -> waiter graph D, in topological order:
// a lone task counts over its producers' ancestor sets; a component with a cycle (only possible
// through a partial wait) is solved by local simulations, one per distinct way its inputs can be cut.
#include <algorithm>
#include <map>

#include "ir/hb_partial.h"

namespace amk::ir::detail {

// Edges from the maximal elements of a downward-closed set of tasks to b. A member is not
// maximal when another member has it as a direct predecessor.
void Partial::add_maxima(const std::vector<int32_t>& set, int32_t b) {
  ++mark_gen_;
  const uint32_t in_set = mark_gen_;
  for (int32_t a : set) mark_[a] = in_set;
  ++mark_gen_;
  const uint32_t dominated = mark_gen_;
  ++seen_gen_;
  for (int32_t x : set) {
    task_preds(x, [&](int32_t u) {
      if (u >= n_) {  // a hub: all its producers precede x, expand it once
        if (seen_[u] == seen_gen_) return;
        seen_[u] = seen_gen_;
        task_preds(u, [&](int32_t p) {
          if (mark_[p] == in_set) mark_[p] = dominated;
        });
      } else if (mark_[u] == in_set) {
        mark_[u] = dominated;
      }
    });
  }
  for (int32_t a : set)
    if (mark_[a] == in_set) d_.add(a, b);
}

// A task alone in its component: every producer of each partial wait is already final.
void Partial::lone_task(int32_t b) {
  for (int32_t s = ix_.wait_begin[b]; s < ix_.wait_begin[b + 1]; ++s) {
    if (!counts(s) || !g_.wait_partial[s]) continue;
    const int32_t c = ix_.wait_counter[s];
    const int64_t need = g_.n_producers[c] - ix_.wait_threshold[s] + 1;
    std::vector<int32_t> forced;
    ++mark_gen_;
    const uint32_t gen = mark_gen_;
    for (int32_t k = ix_.prod_begin[c]; k < ix_.prod_begin[c + 1]; ++k) {
      const int32_t p = ix_.prod[k];
      if (!g_.completable[p]) continue;
      ancestors(p, [&](int32_t a) {
        if (mark_[a] != gen) {
          mark_[a] = gen;
          count_[a] = 0;
        }
        if (++count_[a] == need) forced.push_back(a);
      });
    }
    if (!forced.empty()) add_maxima(forced, b);
  }
}

// Out-neighbours of node v in D (completable tasks and hubs); k is the iteration cursor.
int32_t Partial::d_next(int32_t v, int32_t& k) const {
  if (v >= n_) {
    const int32_t c = v - n_;
    while (ix_.waiter_begin[c] + k < ix_.waiter_begin[c + 1]) {
      const int32_t slot = ix_.waiter_slot[ix_.waiter_begin[c] + k++];
      if (counts(slot)) return ix_.wait_task[slot];
    }
    return kNone;
  }
  if (k == 0) {
    ++k;
    if (ix_.task_out[v] != kNone) return n_ + ix_.task_out[v];
  }
  if (k == 1) {
    ++k;
    if (live(ix_.queue_next[v])) return ix_.queue_next[v];
  }
  return kNone;
}

// Tarjan's strongly connected components of D, iteratively, in topological order.
std::vector<std::vector<int32_t>> Partial::components() {
  const int32_t nodes = n_ + ix_.n_counters;
  std::vector<int32_t> index(nodes, kNone), low(nodes, 0), cursor(nodes, 0), scc_stack, call;
  std::vector<uint8_t> on_stack(nodes, 0);
  std::vector<std::vector<int32_t>> out;
  int32_t next_index = 0;
  for (int32_t root = 0; root < nodes; ++root) {
    if (index[root] != kNone || (root < n_ && !g_.completable[root])) continue;
    call.push_back(root);
    index[root] = low[root] = next_index++;
    scc_stack.push_back(root);
    on_stack[root] = 1;
    while (!call.empty()) {
      const int32_t v = call.back();
      const int32_t w = d_next(v, cursor[v]);
      if (w != kNone) {
        if (index[w] == kNone) {
          index[w] = low[w] = next_index++;
          scc_stack.push_back(w);
          on_stack[w] = 1;
          call.push_back(w);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      call.pop_back();
      if (!call.empty()) low[call.back()] = std::min(low[call.back()], low[v]);
      if (low[v] != index[v]) continue;
      std::vector<int32_t> scc;
      int32_t x;
      do {
        x = scc_stack.back();
        scc_stack.pop_back();
        on_stack[x] = 0;
        scc.push_back(x);
      } while (x != v);
      out.push_back(std::move(scc));
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void Partial::run() {
  for (const std::vector<int32_t>& scc : components()) {
    if (scc.size() == 1) {
      if (scc[0] < n_) lone_task(scc[0]);
      continue;
    }
    std::vector<int32_t> tasks;
    for (int32_t v : scc)
      if (v < n_) tasks.push_back(v);
    std::sort(tasks.begin(), tasks.end());
    component(tasks);
  }
}

void derive_partial_edges(const ProgramIndex& ix, const HbGraph& g, DerivedEdges& derived) {
  Partial(ix, g, derived).run();
}

}  // namespace amk::ir::detail
