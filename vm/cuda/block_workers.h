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

/// A table for `workers` blocks from the text of AMK_BLOCK_WORKERS (a measuring and testing
/// knob): "identity", "reverse", or the workers in block order, comma-separated ("2,0,1"). Every
/// worker exactly once: a queue run twice would corrupt its outputs and one never run would
/// leave its consumers waiting, so anything else is InvalidArgument naming the knob and the
/// offending entry.
inline Result<std::vector<int32_t>> parse_block_workers(const std::string& text, int32_t workers) {
  const auto bad = [&](const std::string& why) {
    return Status(StatusCode::InvalidArgument, "AMK_BLOCK_WORKERS=\"" + text + "\": " + why);
  };
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
      return bad("entry " + std::to_string(table.size()) + " '" + item + "' is not a worker index");
    table.push_back(std::stoi(item));
    at = comma + 1;
  }
  if (static_cast<int32_t>(table.size()) != workers)
    return bad(std::to_string(table.size()) + " entries for " + std::to_string(workers) +
               " blocks (want \"identity\", \"reverse\" or one worker per block)");
  std::vector<char> seen(static_cast<size_t>(workers), 0);
  for (size_t b = 0; b < table.size(); ++b) {
    const int32_t w = table[b];
    if (w >= workers)
      return bad("block " + std::to_string(b) + " names worker " + std::to_string(w) + ", outside [0, " +
                 std::to_string(workers) + ")");
    if (seen[static_cast<size_t>(w)] != 0)
      return bad("worker " + std::to_string(w) + " is named twice (every worker exactly once)");
    seen[static_cast<size_t>(w)] = 1;
  }
  return table;
}

}  // namespace amk::vm::gpuvm
