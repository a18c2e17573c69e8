// vm/cuda/block_workers.h: which worker's queue each block of the persistent kernel runs
// (KernelArgs::block_workers). The identity unless the host asks for another permutation: the
// way to put heavier queues on SMs that stream faster (docs/SM_BALANCE.md). Host code only, so
// the CPU build tests it (tests/vm/block_workers_test.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace amk::vm::gpuvm {

/// Whether `table` (block b runs worker table[b]) is a permutation of [0, workers): every worker
/// exactly once. A queue run twice would corrupt its outputs and one never run would leave its
/// consumers waiting, so anything else is InvalidArgument, starting with `source` (where the
/// table came from) and naming the offending entry.
inline Status check_block_workers(const std::vector<int32_t>& table, int32_t workers, const std::string& source) {
  const auto bad = [&](const std::string& why) { return Status(StatusCode::InvalidArgument, source + ": " + why); };
  if (static_cast<int64_t>(table.size()) != workers)
    return bad(std::to_string(table.size()) + " entries for " + std::to_string(workers) + " blocks (one worker per block)");
  std::vector<char> seen(static_cast<size_t>(workers), 0);
  for (size_t b = 0; b < table.size(); ++b) {
    const int32_t w = table[b];
    if (w < 0 || w >= workers)
      return bad("block " + std::to_string(b) + " names worker " + std::to_string(w) + ", outside [0, " +
                 std::to_string(workers) + ")");
    if (seen[static_cast<size_t>(w)] != 0)
      return bad("worker " + std::to_string(w) + " is named twice (every worker exactly once)");
    seen[static_cast<size_t>(w)] = 1;
  }
  return Status::ok();
}

/// A table for `workers` blocks from the text of AMK_BLOCK_WORKERS (a measuring and testing
/// knob): "identity", "reverse", or the workers in block order, comma-separated ("2,0,1"),
/// checked by check_block_workers.
inline Result<std::vector<int32_t>> parse_block_workers(const std::string& text, int32_t workers) {
  const std::string source = "AMK_BLOCK_WORKERS=\"" + text + "\"";
  std::vector<int32_t> table;
  if (text == "identity" || text == "reverse") {
    for (int32_t b = 0; b < workers; ++b) table.push_back(text == "identity" ? b : workers - 1 - b);
    return table;
  }
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos)
      return Status(StatusCode::InvalidArgument, source + ": entry " + std::to_string(table.size()) + " '" + item +
                                                     "' is not a worker index");
    table.push_back(std::stoi(item));
    at = comma + 1;
  }
  if (Status s = check_block_workers(table, workers, source); !s) return s;
  return table;
}

/// The table that pairs the heaviest queue with the fastest block, the second heaviest with the
/// second fastest, and so on: `queue_load[w]` is worker w's work (its streamed bytes, say) and
/// `block_speed[b]` how fast block b's SM streams (docs/SM_BALANCE.md). Ties keep index order,
/// so equal loads or equal speeds give the identity: a table moves queues only where it can
/// gain. Both vectors must have one positive finite entry per worker.
inline Result<std::vector<int32_t>> match_blocks_to_queues(const std::vector<double>& queue_load,
                                                           const std::vector<double>& block_speed) {
  if (queue_load.size() != block_speed.size())
    return Status(StatusCode::InvalidArgument, "match_blocks_to_queues: " + std::to_string(queue_load.size()) +
                                                   " queues for " + std::to_string(block_speed.size()) + " blocks");
  const size_t n = queue_load.size();
  for (size_t i = 0; i < n; ++i) {
    if (!(queue_load[i] >= 0.0 && queue_load[i] < 1e300))
      return Status(StatusCode::InvalidArgument, "match_blocks_to_queues: queue " + std::to_string(i) + "'s load is " +
                                                     std::to_string(queue_load[i]) + " (want finite, >= 0)");
    if (!(block_speed[i] > 0.0 && block_speed[i] < 1e300))
      return Status(StatusCode::InvalidArgument, "match_blocks_to_queues: block " + std::to_string(i) + "'s speed is " +
                                                     std::to_string(block_speed[i]) + " (want finite, > 0)");
  }
  std::vector<int32_t> by_load(n), by_speed(n);
  for (size_t i = 0; i < n; ++i) by_load[i] = by_speed[i] = static_cast<int32_t>(i);
  const bool equal_loads = std::all_of(queue_load.begin(), queue_load.end(), [&](double v) { return v == queue_load[0]; });
  const bool equal_speeds =
      std::all_of(block_speed.begin(), block_speed.end(), [&](double v) { return v == block_speed[0]; });
  if (!equal_loads && !equal_speeds) {
    std::stable_sort(by_load.begin(), by_load.end(), [&](int32_t a, int32_t b) { return queue_load[a] > queue_load[b]; });
    std::stable_sort(by_speed.begin(), by_speed.end(),
                     [&](int32_t a, int32_t b) { return block_speed[a] > block_speed[b]; });
  }
  std::vector<int32_t> table(n);
  for (size_t i = 0; i < n; ++i) table[static_cast<size_t>(by_speed[i])] = by_load[i];
  return table;
}

/// For the device-side claim (KernelArgs::sm_claims, a kernel built with AMK_SM_CLAIM): the queue
/// a block on each SM id tries first. The heaviest queue goes to the fastest SM, the second to the
/// second, and so on (ties keep index order); SM ids beyond `max_sm_ids`, without a speed, or left
/// over once every queue has one, get 0xff (the block then starts from its own index). Speeds for
/// exactly the SMs that exist keep every block on its ranked queue: a block that starts from its
/// own index may take a ranked queue before the block on that queue's SM claims it (session 54:
/// speeds for 512 SM ids on a 132-SM chip put light queues on fast SMs).
inline std::vector<uint8_t> sm_first_queues(const std::vector<double>& queue_load, const std::vector<double>& speed_by_sm,
                                            int max_sm_ids) {
  std::vector<uint8_t> out(static_cast<size_t>(max_sm_ids), 0xff);
  std::vector<int32_t> sms, queues(queue_load.size());
  for (size_t sm = 0; sm < speed_by_sm.size() && static_cast<int>(sm) < max_sm_ids; ++sm)
    if (speed_by_sm[sm] > 0.0) sms.push_back(static_cast<int32_t>(sm));
  for (size_t q = 0; q < queues.size(); ++q) queues[q] = static_cast<int32_t>(q);
  std::stable_sort(sms.begin(), sms.end(), [&](int32_t a, int32_t b) { return speed_by_sm[a] > speed_by_sm[b]; });
  std::stable_sort(queues.begin(), queues.end(), [&](int32_t a, int32_t b) { return queue_load[a] > queue_load[b]; });
  for (size_t i = 0; i < sms.size() && i < queues.size() && queues[i] < 0xff; ++i)
    out[static_cast<size_t>(sms[i])] = static_cast<uint8_t>(queues[i]);
  return out;
}

/// Keeps a schedule's heavier queues on the SMs that stream faster from launch to launch
/// (docs/SM_BALANCE.md). A launch records the SM each worker started on (KernelArgs::worker_sm);
/// observe() turns that into each block's SM and, when the placement moved (or on the first
/// launch), a new block -> worker table from the queues' loads and those SMs' speeds. Only the
/// table moves queues: the device never takes an index from an SM id, so a wrong or stale guess
/// about the placement costs speed, never correctness.
struct SmBalancer {
  std::vector<double> queue_load;   ///< per worker: its queue's weight bytes, say
  std::vector<double> speed_by_sm;  ///< per hardware SM id (sm_speed.h); 0 or absent = unknown
  std::vector<int32_t> placement;   ///< block -> SM as last observed (empty before the first launch)
  int moves = 0;                    ///< tables handed out (the first included)

  /// After a launch in which block b ran worker table[b] and worker w started on SM
  /// worker_sm[w]: the table for the next launch, or an empty vector when the placement is the
  /// one already balanced for (or a worker recorded no SM: a launch that did not run).
  Result<std::vector<int32_t>> observe(const std::vector<int32_t>& table, const std::vector<int32_t>& worker_sm) {
    const size_t n = table.size();
    if (worker_sm.size() != n || queue_load.size() != n)
      return Status(StatusCode::InvalidArgument, "SmBalancer: " + std::to_string(n) + " blocks, " +
                                                     std::to_string(worker_sm.size()) + " recorded SMs, " +
                                                     std::to_string(queue_load.size()) + " queue loads");
    std::vector<int32_t> block_sm(n);
    for (size_t b = 0; b < n; ++b) {
      const int32_t w = table[b];
      if (w < 0 || static_cast<size_t>(w) >= n || worker_sm[static_cast<size_t>(w)] < 0) return std::vector<int32_t>{};
      block_sm[b] = worker_sm[static_cast<size_t>(w)];
    }
    if (block_sm == placement) return std::vector<int32_t>{};
    placement = block_sm;
    std::vector<double> speed(n, 1.0);
    for (size_t b = 0; b < n; ++b) {
      const auto sm = static_cast<size_t>(block_sm[b]);
      if (sm < speed_by_sm.size() && speed_by_sm[sm] > 0.0) speed[b] = speed_by_sm[sm];
    }
    Result<std::vector<int32_t>> next = match_blocks_to_queues(queue_load, speed);
    if (next) ++moves;
    return next;
  }
};

}  // namespace amk::vm::gpuvm
