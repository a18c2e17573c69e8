// ir/validate_index.h: flat, position-based indexes over a Program (internal to amk_ir).
// Everything the graph algorithms need is turned into positions (index into program.tasks etc.)
// once, in CSR arrays, so that validate() stays near-linear at a million tasks. A reference to an
// id that does not exist becomes -1 and is never followed.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace amk::ir::detail {

inline constexpr int32_t kNone = -1;

/// id value -> position in its list, for ids in [0, n); -1 for absent values. First one wins.
template <typename T>
std::vector<int32_t> id_positions(const std::vector<T>& items) {
  std::vector<int32_t> pos(items.size(), kNone);
  for (size_t i = 0; i < items.size(); ++i) {
    const int32_t v = items[i].id.value;
    if (v >= 0 && static_cast<size_t>(v) < items.size() && pos[static_cast<size_t>(v)] == kNone)
      pos[static_cast<size_t>(v)] = static_cast<int32_t>(i);
  }
  return pos;
}

/// Position of an id in a table from id_positions(), or -1.
template <typename Tag>
int32_t position_of(const std::vector<int32_t>& table, Id<Tag> id) {
  if (id.value < 0 || static_cast<size_t>(id.value) >= table.size()) return kNone;
  return table[static_cast<size_t>(id.value)];
}

/// The counter protocol of a program as positions.
struct ProgramIndex {
  const Program* program = nullptr;
  int32_t n_tasks = 0;
  int32_t n_counters = 0;
  std::vector<int32_t> buffer_of_id, counter_of_id, page_of_id;
  std::vector<int32_t> task_out;        ///< per task: counter position it signals, or -1
  std::vector<int32_t> prod_begin;      ///< CSR counter -> producing tasks (list order)
  std::vector<int32_t> prod;
  std::vector<int32_t> wait_begin;      ///< CSR task -> its waits
  std::vector<int32_t> wait_counter;    ///< counter position, or -1 when dangling
  std::vector<int64_t> wait_threshold;
  std::vector<int32_t> waiter_begin;    ///< CSR counter -> wait slots (indexes into wait_*) on it
  std::vector<int32_t> waiter_slot;
  std::vector<int32_t> wait_task;       ///< per wait slot: the waiting task
  std::vector<int32_t> queue_prev;      ///< per task: previous task of its SM queue, or -1
  std::vector<int32_t> queue_next;

  int32_t producer_count(int32_t c) const { return prod_begin[c + 1] - prod_begin[c]; }
};
ProgramIndex build_index(const Program& program);

/// One run of the counter protocol: fire every ready task (waits met, SM queue predecessor done)
/// until nothing changes. Counters start at 0 (the launch memsets them, spec section 2).
struct Firing {
  std::vector<int32_t> order;   ///< task positions in firing order
  std::vector<uint8_t> fired;   ///< per task
  std::vector<int64_t> value;   ///< final counter values
};
Firing fire_all(const ProgramIndex& ix);

}  // namespace amk::ir::detail
