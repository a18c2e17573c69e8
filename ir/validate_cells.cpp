// ir/validate_cells.cpp: splits one memory object into elementary cells (coordinate compression
// of every access box) and hands each cell's accesses, in hb order, to the walkers. Runs of
// consecutive whole-object reads are collapsed into reader groups (validate_races.h), so a
// buffer written in K tiles and read whole by W tasks costs K + W cell entries, not K * W.
#include <algorithm>

#include "ir/validate_races.h"

namespace amk::ir::detail {

void RaceChecker::cells(int32_t o, int32_t n_live) {
  const ObjAccess* acc = m_.accesses.data() + m_.begin[o];
  rows_.clear();
  cols_.clear();
  for (int32_t i = 0; i < n_live; ++i) {
    for (int32_t k = acc[i].box_begin; k < acc[i].box_end; ++k) {
      const Box& b = m_.boxes[k];
      rows_.insert(rows_.end(), {b.r0, b.r1});
      cols_.insert(cols_.end(), {b.c0, b.c1});
    }
  }
  std::sort(rows_.begin(), rows_.end());
  rows_.erase(std::unique(rows_.begin(), rows_.end()), rows_.end());
  std::sort(cols_.begin(), cols_.end());
  cols_.erase(std::unique(cols_.begin(), cols_.end()), cols_.end());
  const int64_t nr = static_cast<int64_t>(rows_.size()) - 1, nc = static_cast<int64_t>(cols_.size()) - 1;

  // Reader groups: maximal runs (>= 2) of whole-object reads of one buffer by tasks that do not
  // also write this object. code[i] is what access i contributes to a cell list (-1 - group for
  // a run's first access, skipped for the rest of the run).
  groups_.clear();
  std::vector<int32_t>& code = code_;
  code.resize(n_live);
  auto whole_read = [&](int32_t i) {
    if (acc[i].write || acc[i].box_end - acc[i].box_begin != 1) return false;
    const Box& b = m_.boxes[acc[i].box_begin];
    if (b.r0 != rows_.front() || b.r1 != rows_.back() || b.c0 != cols_.front() || b.c1 != cols_.back()) return false;
    for (int32_t j = i - 1; j >= 0 && acc[j].task == acc[i].task; --j)
      if (acc[j].write) return false;
    for (int32_t j = i + 1; j < n_live && acc[j].task == acc[i].task; ++j)
      if (acc[j].write) return false;
    return true;
  };
  for (int32_t i = 0; i < n_live;) {
    int32_t j = i;
    while (j < n_live && whole_read(j) && acc[j].buffer == acc[i].buffer) ++j;
    if (j - i >= 2) {
      groups_.push_back(Group{i, j - 1, acc[i].buffer, {}, -2, false});
      code[i] = -static_cast<int32_t>(groups_.size());
      for (int32_t k = i + 1; k < j; ++k) code[k] = kSkip;
      i = j;
    } else {
      code[i] = i;
      ++i;
    }
  }

  auto walk = [&](int64_t cell, const int32_t* e, int32_t n) {
    const Box box{rows_[cell / nc], rows_[cell / nc + 1], cols_[cell % nc], cols_[cell % nc + 1]};
    if (o < m_.n_buffers) buffer_cell(o, box, e, n);
    else page_cell(o, box, e, n);
  };
  if (nr == 1 && nc == 1) {  // one cell: every access covers all of it
    cell_entries_.clear();
    for (int32_t i = 0; i < n_live; ++i)
      if (code[i] != kSkip) cell_entries_.push_back(code[i]);
    return walk(0, cell_entries_.data(), static_cast<int32_t>(cell_entries_.size()));
  }
  // Group entries by cell keeping hb order inside each cell: a counting sort over the cells when
  // they are few compared with the entries (the usual case), else a sort of (cell, entry) pairs.
  // Each box as a range of compressed rows and columns, found once (binary searches dominate).
  const auto lb = [](const std::vector<int64_t>& v, int64_t x) {
    return static_cast<int32_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
  };
  ranges_.clear();
  for (int32_t i = 0; i < n_live; ++i) {
    if (code[i] == kSkip) continue;
    for (int32_t k = acc[i].box_begin; k < acc[i].box_end; ++k) {
      const Box& b = m_.boxes[k];
      ranges_.push_back(CellRange{i, lb(rows_, b.r0), lb(rows_, b.r1), lb(cols_, b.c0), lb(cols_, b.c1)});
    }
  }
  auto each_cell = [&](auto&& f) {
    for (const CellRange& q : ranges_)
      for (int64_t r = q.r0; r < q.r1; ++r)
        for (int64_t c = q.c0; c < q.c1; ++c) f(r * nc + c, q.entry);
  };
  int64_t n_entries = 0;
  for (const CellRange& q : ranges_) n_entries += static_cast<int64_t>(q.r1 - q.r0) * (q.c1 - q.c0);
  const int64_t n_cells = nr * nc;
  if (n_cells <= 4 * n_entries + 1024) {
    cell_begin_.assign(n_cells + 1, 0);
    each_cell([&](int64_t cell, int32_t) { ++cell_begin_[cell + 1]; });
    for (int64_t c = 0; c < n_cells; ++c) cell_begin_[c + 1] += cell_begin_[c];
    cell_fill_.assign(cell_begin_.begin(), cell_begin_.end() - 1);
    cell_entries_.resize(n_entries);
    each_cell([&](int64_t cell, int32_t i) { cell_entries_[cell_fill_[cell]++] = code[i]; });
    for (int64_t c = 0; c < n_cells; ++c)
      if (cell_begin_[c + 1] > cell_begin_[c])
        walk(c, cell_entries_.data() + cell_begin_[c], static_cast<int32_t>(cell_begin_[c + 1] - cell_begin_[c]));
    return;
  }
  pairs_.clear();
  each_cell([&](int64_t cell, int32_t i) { pairs_.emplace_back(cell, i); });
  std::sort(pairs_.begin(), pairs_.end());
  cell_entries_.resize(pairs_.size());
  for (size_t i = 0; i < pairs_.size(); ++i) cell_entries_[i] = code[pairs_[i].second];
  for (size_t i = 0; i < pairs_.size();) {
    size_t j = i;
    while (j < pairs_.size() && pairs_[j].first == pairs_[i].first) ++j;
    walk(pairs_[i].first, cell_entries_.data() + i, static_cast<int32_t>(j - i));
    i = j;
  }
}

}  // namespace amk::ir::detail
