// ir/validate_races.h: the per-object race checker (internal). For every elementary cell of a
// memory object, the accesses that cover it, in happens-before topological order, must form
// W1, {readers}, W2, {readers}, ... with each consecutive pair hb-ordered (docs/VALIDATION.md).
// A run of consecutive whole-object reads becomes one reader group per cell, so that K tiles read
// by W whole-buffer readers cost K + W, not K * W; a group is checked at once when its members
// share a counter (the common case), else member by member. A run of consecutive accumulates
// (ACCUMULATE, docs/FOLD.md) is one write event whose members need no order among themselves.
// Cells are built in validate_cells.cpp, walked in validate_races.cpp (buffers) and
// validate_pages.cpp (shared pages); the messages are worded in validate_race_report.cpp.
#pragma once
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/hb_query.h"
#include "ir/validate_checks.h"
#include "ir/validate_objects.h"

namespace amk::ir::detail {

class RaceChecker {
 public:
  RaceChecker(Context& cx, const HbGraph& g, const MemObjects& m) : cx_(cx), p_(cx.program), g_(g), m_(m), q_(g, cx.ix) {}
  void run();

 private:
  /// Which side of an ordered pair accumulates, for race.accumulate's wording: the earlier task
  /// `a` accumulates and `b` reads (ReadAfter) or stores (WriteAfter), or `b` accumulates after
  /// `a` stored (AfterWrite) or read (AfterRead).
  enum class AccPair : uint8_t { None, ReadAfter, WriteAfter, AfterWrite, AfterRead };
  /// Why a question was asked: rule, object, the cell, and the buffers of both sides.
  struct Why {
    const char* rule;
    int32_t object;
    Box cell;
    int32_t buf_a, buf_b;
    AccPair acc;
  };
  struct Step {  // one task's (or one reader group's) accesses to one cell
    int32_t task;   // the task, or a group's first member
    bool read, write;
    bool acc;       // every access of the step is an accumulate (a read-modify-write)
    int32_t first;  // first entry index into the cell list
    int32_t code;   // the task, or -(group + 1)
  };
  /// Consecutive whole-object reads (accesses first..last of the object, one buffer).
  struct Group {
    int32_t first, last, buffer;
    std::vector<int32_t> joins;  // counters every member waits on with an all-join wait
    int32_t signal = -2;         // the counter every member signals, -1 if they differ, -2 unknown
    bool joins_known = false;
  };
  void object(int32_t o);
  void cells(int32_t o, int32_t n_live);
  void buffer_cell(int32_t o, const Box& cell, const int32_t* entries, int32_t n);
  void page_cell(int32_t o, const Box& cell, const int32_t* entries, int32_t n);  // validate_pages.cpp
  void ask(int32_t a, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b,
           AccPair acc = AccPair::None);
  /// Task `t` reads (or, `acc`, accumulates into) a transient cell that no earlier step wrote.
  void unwritten(int32_t o, const Box& cell, int32_t t, const int32_t* entries, int32_t n, bool acc);
  /// Every member of group `g` is hb-after task `a` (or task `a` is hb-after every member).
  void group_after(int32_t a, int32_t g, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b,
                   AccPair acc = AccPair::None);
  void group_before(int32_t g, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b,
                    AccPair acc = AccPair::None);
  /// `code` is a task (>= 0) or a group; ask whether it happens before task b.
  void ask_code(int32_t code, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b,
                AccPair acc = AccPair::None);
  int32_t code_task(int32_t code) const;
  bool joins(int32_t t, int32_t c) const;  // t waits on c with an all-join wait
  /// A KV reader (task or group `code`) sits before writer `w` in hb order: race.kv at once.
  void kv_read_before_write(int32_t code, int32_t w, int32_t o, const Box& cell);
  void report(const HbQuestion& h);
  /// The partial wait slot of `waiter` on a counter that `fed_by` produces or precedes a producer
  /// of (a first-t-of-N wait cannot order `waiter` after it), or kNone.
  int32_t partial_wait_fed_by(int32_t waiter, int32_t fed_by);
  /// The message of a failed order question (rules other than race.partial-wait).
  std::string order_message(const Why& w, int32_t a, int32_t b) const;
  /// The all-join advice for a task that must follow accumulating task `a` (and its peers).
  std::string all_join_hint(int32_t a) const;
  std::string where(int32_t o, const Box& cell) const;  // ` "name" rows/cols/bytes` text
  std::string object_name(int32_t o) const;

  Context& cx_;
  const Program& p_;
  const HbGraph& g_;
  const MemObjects& m_;
  HbQueries q_;
  std::vector<Why> why_;
  std::vector<uint64_t> recent_ = std::vector<uint64_t>(4096, 0);  // (a, b) + 1 of recent questions
  std::vector<int64_t> rows_, cols_;          // compressed bounds of the current object
  std::vector<int32_t> cell_entries_, readers_, code_;
  // The current cell's last write event (one plain writer, or a run of accumulates), and what an
  // accumulate run must come after: the readers before it, else the write event before it.
  std::vector<int32_t> prev_, run_readers_, run_gate_;
  std::vector<int64_t> cell_begin_, cell_fill_;
  std::vector<std::pair<int64_t, int32_t>> pairs_;
  struct CellRange {  // an access box in compressed coordinates
    int32_t entry, r0, r1, c0, c1;
  };
  std::vector<CellRange> ranges_;
  std::vector<Step> steps_;
  std::vector<Group> groups_;  // of the current object
  int32_t object_begin_ = 0;   // first access of the current object
  static constexpr int32_t kSkip = INT32_MIN;  // a grouped access after its group's first
};

}  // namespace amk::ir::detail
