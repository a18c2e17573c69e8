// tests/ir/interleaving_oracle.h: an exhaustive dynamic judge of small programs, independent of
// validate(). It explores every interleaving of task start and end events that the counter protocol
// (a task starts once every wait's counter reaches its threshold) and the per-SM queue order (a task
// with an `sm` starts after every earlier task of that queue completed) allow, and reports:
//   deadlock   a reachable state where nothing can fire and tasks remain;
//   race       two conflicting accesses in flight together (at least one writes, and they are not
//              two accumulates of one buffer), or a read or accumulate that can start before the
//              write it depends on (a transient cell nobody wrote yet, a page cell last written
//              through another buffer, a KV cache read before this pass's append completed);
//   unproduced an IO_OUTPUT cell that no task wrote by the end of a complete execution.
// Memory accesses follow ir::task_accesses (docs/OPCODES.md), the same model validate() judges by.
#pragma once
#include <cstdint>
#include <string>

#include "ir/program.h"

namespace amk::testing {

/// What the exhaustive exploration found; each kind keeps the first witness it met.
struct OracleVerdict {
  bool deadlock = false;
  bool race = false;
  bool unproduced = false;
  std::string witness;  ///< one line per kind found, e.g. "race: overlap of t1 and t3 at start of t3"
  int64_t states = 0;   ///< distinct states visited
  /// Two tasks accumulating into the same cell of one buffer were in flight together in some
  /// execution (allowed: adds commute); tests use it to show such programs were explored.
  bool accumulate_overlap = false;
  bool ok() const { return !deadlock && !race && !unproduced; }
};

/// Limits of the exact state encoding (one 64-bit key per state).
inline constexpr int kOracleMaxTasks = 8;
inline constexpr int kOracleMaxPageCells = 24;  ///< cells on pages, 2 bits of last-writer each

/// Explores `program` exhaustively. Precondition: structurally valid (dense ids, references in
/// range), at most kOracleMaxTasks tasks, at most 3 buffers per page, every page-bound buffer with a
/// 4-byte dtype and at most kOracleMaxPageCells page cells in all. Throws std::invalid_argument
/// otherwise, so an out-of-range program can never be silently judged.
OracleVerdict interleaving_oracle(const ir::Program& program);

}  // namespace amk::testing
