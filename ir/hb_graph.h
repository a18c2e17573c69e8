// ir/hb_graph.h: the exact happens-before graph of docs/VALIDATION.md (internal).
// Nodes are tasks [0, n_tasks) and one hub per counter [n_tasks, n_tasks + n_counters): a producer
// points at its counter's hub and the hub at every all-join waiter, so a counter joined by N tasks
// and awaited by W tasks costs N + W edges, not N * W. Partial waits and counter cycles add derived
// edges (hb_partial.cpp). Only completable tasks have edges; `A hb B` iff A reaches B.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/validate_index.h"

namespace amk::ir::detail {

struct HbGraph {
  int32_t n_tasks = 0;
  int32_t n_nodes = 0;
  std::vector<uint8_t> completable;     ///< per task: fires in the counter simulation
  std::vector<int32_t> n_producers;     ///< per counter: completable producers
  std::vector<uint8_t> wait_partial;    ///< per wait slot: 1 when 1 <= threshold < n_producers
  std::vector<int32_t> out_begin, out;  ///< CSR over nodes
  std::vector<int32_t> in_begin, in;
  std::vector<int32_t> pos;             ///< topological position per node
  std::vector<int32_t> task_order;      ///< completable tasks by position
  bool acyclic = true;                  ///< false only on an internal error
  int64_t critical_path = 0;            ///< most tasks on one hb chain
  int64_t derived_edges = 0;            ///< edges added for partial waits and counter cycles

  bool is_hub(int32_t node) const { return node >= n_tasks; }
  /// a -> b is one hb step: queue predecessor, all-join wait on a's counter, or a derived edge.
  bool direct(int32_t a, int32_t b, const ProgramIndex& ix) const;
};

/// Derived hb edges (src task -> dst task), stored as a forward star keyed by dst while built.
struct DerivedEdges {
  std::vector<int32_t> head;  ///< per task: first edge index or -1
  std::vector<int32_t> next, src;
  void add(int32_t from, int32_t to) {
    src.push_back(from);
    next.push_back(head[to]);
    head[to] = static_cast<int32_t>(src.size()) - 1;
  }
};

/// Adds the edges that partial waits and counter cycles imply (hb_partial.cpp). `g` holds
/// completable, n_producers and wait_partial; its CSR is not built yet.
void derive_partial_edges(const ProgramIndex& ix, const HbGraph& g, DerivedEdges& derived);

/// Build the graph from one counter simulation.
HbGraph build_hb_graph(const ProgramIndex& ix, const Firing& firing);

}  // namespace amk::ir::detail
