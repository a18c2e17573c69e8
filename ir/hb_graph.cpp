// ir/hb_graph.cpp: assembles the happens-before graph (hb_graph.h) from one counter simulation:
// queue edges, producer -> hub -> all-join waiter edges, and the derived edges of hb_partial.cpp;
// then a Kahn order (the topological positions the race checker sorts by) and the critical path.
#include "ir/hb_graph.h"

#include <algorithm>

namespace amk::ir::detail {

bool HbGraph::direct(int32_t a, int32_t b, const ProgramIndex& ix) const {
  const int32_t hub = ix.task_out[a] == kNone ? kNone : n_tasks + ix.task_out[a];
  for (int32_t k = in_begin[b]; k < in_begin[b + 1]; ++k)
    if (in[k] == a || in[k] == hub) return true;
  return false;
}

HbGraph build_hb_graph(const ProgramIndex& ix, const Firing& firing) {
  HbGraph g;
  const int32_t n = ix.n_tasks;
  g.n_tasks = n;
  g.n_nodes = n + ix.n_counters;
  g.completable = firing.fired;
  g.n_producers.assign(ix.n_counters, 0);
  for (int32_t t = 0; t < n; ++t)
    if (g.completable[t] && ix.task_out[t] != kNone) ++g.n_producers[ix.task_out[t]];

  // Classify the waits of completable tasks: all-join (a hub edge) or partial.
  const auto n_slots = static_cast<int32_t>(ix.wait_counter.size());
  g.wait_partial.assign(n_slots, 0);
  std::vector<uint8_t> hub_used(ix.n_counters, 0);
  bool any_partial = false;
  for (int32_t s = 0; s < n_slots; ++s) {
    const int32_t c = ix.wait_counter[s];
    if (!g.completable[ix.wait_task[s]] || c == kNone || ix.wait_threshold[s] < 1) continue;
    if (ix.wait_threshold[s] < g.n_producers[c]) {
      g.wait_partial[s] = 1;
      any_partial = true;
    } else {
      hub_used[c] = 1;
    }
  }
  DerivedEdges derived;
  derived.head.assign(n, kNone);
  if (any_partial) derive_partial_edges(ix, g, derived);
  g.derived_edges = static_cast<int64_t>(derived.src.size());

  // Edge list (src, dst) in two passes: count, then fill, for both directions.
  std::vector<int32_t> es, ed;
  es.reserve(static_cast<size_t>(3) * n);
  ed.reserve(static_cast<size_t>(3) * n);
  auto edge = [&](int32_t a, int32_t b) {
    es.push_back(a);
    ed.push_back(b);
  };
  for (int32_t t = 0; t < n; ++t) {
    if (!g.completable[t]) continue;
    const int32_t c = ix.task_out[t];
    if (c != kNone && hub_used[c]) edge(t, n + c);
    if (ix.queue_prev[t] != kNone) edge(ix.queue_prev[t], t);
    for (int32_t s = ix.wait_begin[t]; s < ix.wait_begin[t + 1]; ++s) {
      const int32_t wc = ix.wait_counter[s];
      if (wc != kNone && ix.wait_threshold[s] >= 1 && !g.wait_partial[s]) edge(n + wc, t);
    }
    for (int32_t e = derived.head[t]; e != kNone; e = derived.next[e]) edge(derived.src[e], t);
  }
  auto csr = [&](const std::vector<int32_t>& key, const std::vector<int32_t>& val, std::vector<int32_t>& begin,
                 std::vector<int32_t>& out) {
    begin.assign(g.n_nodes + 1, 0);
    for (int32_t k : key) ++begin[k + 1];
    for (int32_t i = 0; i < g.n_nodes; ++i) begin[i + 1] += begin[i];
    out.resize(key.size());
    std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < key.size(); ++i) out[fill[key[i]]++] = val[i];
  };
  csr(es, ed, g.out_begin, g.out);
  csr(ed, es, g.in_begin, g.in);

  // Kahn, seeded by node index (deterministic positions).
  std::vector<int32_t> indeg(g.n_nodes);
  for (int32_t v = 0; v < g.n_nodes; ++v) indeg[v] = g.in_begin[v + 1] - g.in_begin[v];
  std::vector<int32_t> order;
  order.reserve(g.n_nodes);
  for (int32_t v = 0; v < g.n_nodes; ++v)
    if (indeg[v] == 0) order.push_back(v);
  for (size_t head = 0; head < order.size(); ++head) {
    const int32_t v = order[head];
    for (int32_t k = g.out_begin[v]; k < g.out_begin[v + 1]; ++k)
      if (--indeg[g.out[k]] == 0) order.push_back(g.out[k]);
  }
  g.acyclic = static_cast<int32_t>(order.size()) == g.n_nodes;
  g.pos.assign(g.n_nodes, g.n_nodes);
  for (size_t i = 0; i < order.size(); ++i) g.pos[order[i]] = static_cast<int32_t>(i);
  std::vector<int64_t> chain(g.n_nodes, 0);
  for (int32_t v : order) {
    int64_t best = 0;
    for (int32_t k = g.in_begin[v]; k < g.in_begin[v + 1]; ++k) best = std::max(best, chain[g.in[k]]);
    chain[v] = best + (v < n ? 1 : 0);
    if (v < n && g.completable[v]) {
      g.task_order.push_back(v);
      g.critical_path = std::max(g.critical_path, chain[v]);
    }
  }
  return g;
}

}  // namespace amk::ir::detail
