// tests/ir/interleaving_oracle.cpp: see interleaving_oracle.h. A state is (done set, in-flight set,
// last buffer written to each page cell), packed into 64 bits. Everything that depends only on the
// static accesses is precomputed per task as bitmasks over tasks, so a start costs a few mask tests:
// which tasks it conflicts with, which writers each of its reads needs done, which KV appenders it
// must wait for. A read of a cell outside pages always finds its own buffer's last value once any
// writer of it is done, so only page cells need the last-writer part of the state.
#include "interleaving_oracle.h"

#include <map>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "ir/access.h"
#include "ir/enums.h"

namespace amk::testing {
namespace {

using Mask = uint32_t;

struct Cell {
  int object;    // a buffer id, or 1000 + page id for a page shared by several buffers
  int64_t elem;  // element index within the object (4-byte elements)
  bool operator<(const Cell& o) const { return object != o.object ? object < o.object : elem < o.elem; }
};

struct TaskFacts {
  Mask conflicts = 0;             // tasks it must never be in flight with (it may include itself)
  Mask acc_peers = 0;             // other tasks accumulating into a cell it accumulates into
  std::vector<Mask> read_needs;   // per transient read cell: tasks writing that cell through that buffer
  std::vector<std::pair<int, int>> page_reads;  // (page cell, code of the buffer read) checked against last
  std::vector<std::pair<int, int>> page_writes;  // (page cell, code of the buffer written)
  Mask kv_appenders = 0;          // appenders of caches it reads (must all be done first)
  Mask queue_pred = 0;            // its SM-queue predecessor
  std::vector<std::pair<Mask, int64_t>> waits;  // (producers of the counter, threshold)
};

class Explorer {
 public:
  explicit Explorer(const ir::Program& p) : p_(p), n_(static_cast<int>(p.tasks.size())), facts_(n_) {
    if (n_ > kOracleMaxTasks) throw std::invalid_argument("oracle: too many tasks");
    index_pages();
    collect_accesses();
    collect_order();
  }

  OracleVerdict run() {
    // An append that can never run is no append: a KV reader then reads prior-step state, as when
    // the cache is not appended this pass (the program still deadlocks, which is reported).
    const Mask completable = completable_tasks();
    for (TaskFacts& f : facts_) f.kv_appenders &= completable;
    std::unordered_set<uint64_t> seen;
    std::vector<uint64_t> stack{0};
    seen.insert(0);
    while (!stack.empty()) {
      const uint64_t s = stack.back();
      stack.pop_back();
      const Mask done = s & 0xff, flying = (s >> 8) & 0xff;
      bool moved = false;
      for (int t = 0; t < n_; ++t) {
        const Mask bit = Mask{1} << t;
        uint64_t next;
        if (flying & bit) {
          next = finish(s, t);
        } else if (!(done & bit) && ready(done, t)) {
          check_start(s, t);
          next = s | uint64_t{bit} << 8;
        } else {
          continue;
        }
        moved = true;
        if (seen.insert(next).second) stack.push_back(next);
      }
      if (!moved) check_terminal(done);
    }
    v_.states = static_cast<int64_t>(seen.size());
    return v_;
  }

 private:
  void index_pages() {
    if (!p_.pages) return;
    std::map<int, std::vector<int>> members;
    for (auto [bid, pid] : p_.pages->buffer_to_page) members[pid.value].push_back(bid.value);
    for (auto& [pid, bufs] : members) {
      if (bufs.size() < 2) continue;  // a page of one buffer is just that buffer
      if (bufs.size() > 3) throw std::invalid_argument("oracle: more than 3 buffers on a page");
      for (size_t i = 0; i < bufs.size(); ++i) {
        if (ir::dtype_nbytes(p_.buffers[bufs[i]].dtype, 1) != 4) throw std::invalid_argument("oracle: page dtype");
        page_of_[bufs[i]] = {1000 + pid, static_cast<int>(i) + 1};
      }
    }
  }

  int page_cell(const Cell& c) {
    auto [it, fresh] = page_cells_.emplace(c, static_cast<int>(page_cells_.size()));
    if (fresh && page_cells_.size() > static_cast<size_t>(kOracleMaxPageCells))
      throw std::invalid_argument("oracle: too many page cells");
    return it->second;
  }

  void collect_accesses() {
    // Per task: its cells (read/write, buffer); the conflict masks need every task's list first.
    struct Touch { Cell cell; int buffer; bool write; bool acc; };
    std::vector<std::vector<Touch>> touches(n_);
    std::map<int, Mask> appenders;  // KV buffer -> tasks writing it
    for (int t = 0; t < n_; ++t) {
      for (const ir::Access& a : ir::task_accesses(p_, p_.tasks[t])) {
        const ir::Buffer& buf = p_.buffers[a.buffer.value];
        if (ir::buffer_kind_is_readonly(buf.kind)) continue;  // never written: nothing to order
        const int64_t cols = ir::matrix_view(buf).cols;
        auto page = page_of_.find(a.buffer.value);
        const int object = page == page_of_.end() ? a.buffer.value : page->second.first;
        for (int64_t r = a.region.row_begin; r < a.region.row_end; ++r)
          for (int64_t c = a.region.col_begin; c < a.region.col_end; ++c)
            touches[t].push_back({Cell{object, r * cols + c}, a.buffer.value, a.write, a.accumulate});
        if (buf.kind == ir::BufferKind::KvCache && a.write) appenders[a.buffer.value] |= Mask{1} << t;
      }
    }
    for (int t = 0; t < n_; ++t) {
      TaskFacts& f = facts_[t];
      for (const Touch& a : touches[t]) {
        for (int u = 0; u < n_; ++u)
          for (const Touch& b : touches[u]) {
            if (b.cell.object != a.cell.object || b.cell.elem != a.cell.elem || !(a.write || b.write)) continue;
            // Within one task reads precede writes, so only two different buffers over the same
            // page bytes conflict (it would clobber its own input).
            if (u == t && a.buffer == b.buffer) continue;
            // Adds into one buffer commute; an accumulate conflicts with anything else.
            if (a.acc && b.acc && a.buffer == b.buffer) {
              if (u != t) f.acc_peers |= Mask{1} << u;
              continue;
            }
            f.conflicts |= Mask{1} << u;
          }
        auto page = page_of_.find(a.buffer);
        const int code = page == page_of_.end() ? 0 : page->second.second;
        if (a.write && code) f.page_writes.emplace_back(page_cell(a.cell), code);
        if (a.write && !a.acc) continue;  // an accumulate also reads the value it adds to
        const ir::BufferKind kind = p_.buffers[a.buffer].kind;
        if (ir::buffer_kind_is_transient(kind)) {
          Mask writers = 0;
          for (int u = 0; u < n_; ++u)
            if (u != t)
              for (const Touch& b : touches[u])
                if (b.write && b.buffer == a.buffer && b.cell.elem == a.cell.elem) writers |= Mask{1} << u;
          f.read_needs.push_back(writers);  // empty mask: nothing but itself writes it, never satisfiable
          if (code) f.page_reads.emplace_back(page_cell(a.cell), code);
        }
        if (kind == ir::BufferKind::KvCache && appenders.count(a.buffer) && !(appenders[a.buffer] >> t & 1))
          f.kv_appenders |= appenders[a.buffer];
      }
      for (const Touch& a : touches[t])
        if (a.write && p_.buffers[a.buffer].kind == ir::BufferKind::IoOutput) output_writers_[a.cell] |= Mask{1} << t;
    }
    for (const ir::Buffer& b : p_.buffers)
      if (b.kind == ir::BufferKind::IoOutput) {
        const ir::MatrixView m = ir::matrix_view(b);
        for (int64_t e = 0; e < m.rows * m.cols; ++e) output_writers_.emplace(Cell{b.id.value, e}, 0);
      }
  }

  void collect_order() {
    for (int t = 0; t < n_; ++t) {
      const ir::Task& task = p_.tasks[t];
      for (int u = t - 1; u >= 0 && task.sm; --u)
        if (p_.tasks[u].sm == task.sm) {
          facts_[t].queue_pred = Mask{1} << u;
          break;
        }
      for (const ir::Wait& w : task.waits) {
        Mask producers = 0;
        for (int u = 0; u < n_; ++u)
          if (p_.tasks[u].out_counter == w.counter) producers |= Mask{1} << u;
        facts_[t].waits.emplace_back(producers, w.threshold);
      }
    }
  }

  // Counters only grow, so firing never disables a task: every maximal execution completes the
  // same set, found by firing whatever is ready until nothing is.
  Mask completable_tasks() const {
    Mask done = 0;
    for (bool fired = true; fired;) {
      fired = false;
      for (int t = 0; t < n_; ++t)
        if (!(done >> t & 1) && ready(done, t)) {
          done |= Mask{1} << t;
          fired = true;
        }
    }
    return done;
  }

  bool ready(Mask done, int t) const {
    const TaskFacts& f = facts_[t];
    if ((done & f.queue_pred) != f.queue_pred) return false;
    for (auto [producers, threshold] : f.waits)
      if (__builtin_popcount(done & producers) < threshold) return false;
    return true;
  }

  static int last_code(uint64_t s, int cell) { return static_cast<int>(s >> (16 + 2 * cell) & 3); }

  uint64_t finish(uint64_t s, int t) const {
    uint64_t next = (s & ~(uint64_t{1} << (8 + t))) | uint64_t{1} << t;
    for (auto [cell, code] : facts_[t].page_writes)
      next = (next & ~(uint64_t{3} << (16 + 2 * cell))) | uint64_t(code) << (16 + 2 * cell);
    return next;
  }

  void found(bool& kind, const std::string& what) {
    if (!kind) v_.witness += what + "\n";
    kind = true;
  }

  void check_start(uint64_t s, int t) {
    const Mask done = s & 0xff, flying = (s >> 8) & 0xff;
    const TaskFacts& f = facts_[t];
    const std::string at = " at the start of " + name(t);
    if (f.conflicts & (flying | Mask{1} << t)) found(v_.race, "race: conflicting accesses in flight together" + at);
    if (f.acc_peers & flying) v_.accumulate_overlap = true;
    for (Mask writers : f.read_needs)
      if (!(done & writers)) found(v_.race, "race: reads a cell no completed task wrote" + at);
    for (auto [cell, code] : f.page_reads)
      if (last_code(s, cell) != code) found(v_.race, "race: reads a page cell last written through another buffer" + at);
    if ((done & f.kv_appenders) != f.kv_appenders) found(v_.race, "race: reads a KV cache before its append" + at);
  }

  void check_terminal(Mask done) {
    if (done != (Mask{1} << n_) - 1) {
      found(v_.deadlock, "deadlock: nothing can fire and tasks remain (done mask " + std::to_string(done) + ")");
      return;
    }
    for (const auto& [cell, writers] : output_writers_)
      if (!(done & writers))
        found(v_.unproduced, "unproduced: output buffer " + std::to_string(cell.object) + " element " +
                                 std::to_string(cell.elem) + " never written");
  }

  std::string name(int t) const { return "task " + std::to_string(t) + " (" + p_.tasks[t].label + ")"; }

  const ir::Program& p_;
  int n_;
  std::vector<TaskFacts> facts_;
  std::map<int, std::pair<int, int>> page_of_;  // buffer -> (page object, 1-based code on that page)
  std::map<Cell, int> page_cells_;
  std::map<Cell, Mask> output_writers_;
  OracleVerdict v_;
};

}  // namespace

OracleVerdict interleaving_oracle(const ir::Program& program) { return Explorer(program).run(); }

}  // namespace amk::testing
