// ir/access.h: the memory-access model of each opcode, which the race checker, the adversarial
// simulator and the exhaustive oracle all judge by. docs/OPCODES.md states it per opcode.
// A buffer is viewed as a matrix [rows, cols]: cols = last dimension (1 for rank 0), rows = the
// product of the other dimensions. Regions are half-open boxes over that matrix.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

struct Region {
  int64_t row_begin = 0, row_end = 0;
  int64_t col_begin = 0, col_end = 0;
  bool empty() const { return row_begin >= row_end || col_begin >= col_end; }
  bool overlaps(const Region& o) const {
    return row_begin < o.row_end && o.row_begin < row_end && col_begin < o.col_end && o.col_begin < col_end;
  }
  bool operator==(const Region& o) const {
    return row_begin == o.row_begin && row_end == o.row_end && col_begin == o.col_begin && col_end == o.col_end;
  }
};

/// [rows, cols] of a buffer as the access model sees it.
struct MatrixView {
  int64_t rows = 1;
  int64_t cols = 1;
};
MatrixView matrix_view(const Buffer& buffer);
/// The whole buffer as a region.
Region whole_region(const Buffer& buffer);

/// One read or write of one operand.
struct Access {
  BufferId buffer;
  bool write = false;
  Region region;
  int operand = 0;  ///< index into task.inputs (reads) or task.outputs (writes)
  /// A write that adds into the memory (ACCUMULATE, docs/FOLD.md): a read-modify-write, so it needs
  /// a written value like a read, but two accumulates of the same bytes need no order between them.
  bool accumulate = false;
};

/// Every read and write of `task`. Requires the task's buffer ids to be in range; params that are
/// missing or mistyped fall back to the whole buffer (validate() reports those separately).
std::vector<Access> task_accesses(const Program& program, const Task& task);
/// Same as task_accesses, appending to `out` (no allocation per task on hot paths).
/// `buffer_of_id`, when given, maps a buffer id value to its position in program.buffers (-1: none),
/// so that programs whose ids are dense but not in order need no search.
void task_accesses_append(const Program& program, const Task& task, std::vector<Access>& out,
                          const std::vector<int32_t>* buffer_of_id = nullptr);

}  // namespace amk::ir
