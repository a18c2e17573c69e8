// ir/validate_races.cpp: the race checks of docs/VALIDATION.md over buffer objects (race.raw,
// race.war, race.waw, race.unwritten-read, race.kv, race.accumulate, race.partial-wait), driving
// the batched happens-before questions. Consecutive accesses of each cell are checked; a check
// implied by two others (writer -> reader -> next writer) is not asked again, since hb is
// transitive. The messages are worded in validate_race_report.cpp.
#include "ir/validate_races.h"

#include <algorithm>

namespace amk::ir::detail {

void check_outputs(Context& cx, const MemObjects& m);  // validate_outputs.cpp
void check_onchip(Context& cx, const MemObjects& m);   // validate_outputs.cpp

std::string RaceChecker::object_name(int32_t o) const {
  return o < m_.n_buffers ? buffer_ref(p_, o) : page_ref(p_, m_.object_page[o - m_.n_buffers]);
}

std::string RaceChecker::where(int32_t o, const Box& cell) const {
  if (m_.byte_mode[o]) return object_name(o) + " bytes [" + std::to_string(cell.c0) + ", " + std::to_string(cell.c1) + ")";
  return object_name(o) + region_text(Region{cell.r0, cell.r1, cell.c0, cell.c1}, matrix_view(p_.buffers[o]));
}

void RaceChecker::ask(int32_t a, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b,
                      AccPair acc) {
  if (a == b || q_.direct(a, b)) return;
  // Neighbouring cells ask the same pairs; a small direct-mapped cache drops most repeats and
  // resolve() removes the rest.
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  uint64_t& slot = recent_[(key * 0x9E3779B97F4A7C15ull) >> 52];
  if (slot == key + 1) return;
  slot = key + 1;
  why_.push_back(Why{rule, o, cell, buf_a, buf_b, acc});
  q_.enqueue(a, b, static_cast<int32_t>(why_.size()) - 1);
}

int32_t RaceChecker::code_task(int32_t code) const {
  return code >= 0 ? code : m_.accesses[object_begin_ + groups_[-code - 1].first].task;
}

bool RaceChecker::joins(int32_t t, int32_t c) const {
  for (int32_t s = cx_.ix.wait_begin[t]; s < cx_.ix.wait_begin[t + 1]; ++s)
    if (cx_.ix.wait_counter[s] == c && cx_.ix.wait_threshold[s] >= 1 && !g_.wait_partial[s]) return true;
  return false;
}

void RaceChecker::group_after(int32_t a, int32_t g, const char* rule, int32_t o, const Box& cell, int32_t buf_a,
                              int32_t buf_b, AccPair acc) {
  Group& gr = groups_[g];
  const ObjAccess* accs = m_.accesses.data() + object_begin_;
  if (!gr.joins_known) {  // counters joined (all-join) by every member
    gr.joins_known = true;
    const int32_t t0 = accs[gr.first].task;
    for (int32_t s = cx_.ix.wait_begin[t0]; s < cx_.ix.wait_begin[t0 + 1]; ++s) {
      const int32_t c = cx_.ix.wait_counter[s];
      bool all = cx_.ix.wait_threshold[s] >= 1 && !g_.wait_partial[s];
      for (int32_t k = gr.first + 1; all && k <= gr.last; ++k) all = joins(accs[k].task, c);
      if (all) gr.joins.push_back(c);
    }
  }
  const int32_t c = cx_.ix.task_out[a];
  if (std::find(gr.joins.begin(), gr.joins.end(), c) != gr.joins.end()) {
    q_.count();  // a -> hub(c) -> every member
    return;
  }
  for (int32_t k = gr.first; k <= gr.last; ++k) ask(a, accs[k].task, rule, o, cell, buf_a, buf_b, acc);
}

void RaceChecker::group_before(int32_t g, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a,
                               int32_t buf_b, AccPair acc) {
  Group& gr = groups_[g];
  const ObjAccess* accs = m_.accesses.data() + object_begin_;
  if (gr.signal == -2) {
    gr.signal = cx_.ix.task_out[accs[gr.first].task];
    for (int32_t k = gr.first + 1; k <= gr.last && gr.signal != -1; ++k)
      if (cx_.ix.task_out[accs[k].task] != gr.signal) gr.signal = -1;
  }
  if (gr.signal >= 0 && joins(b, gr.signal)) {
    q_.count();  // every member -> hub(signal) -> b
    return;
  }
  for (int32_t k = gr.first; k <= gr.last; ++k) ask(accs[k].task, b, rule, o, cell, buf_a, buf_b, acc);
}

void RaceChecker::ask_code(int32_t code, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a,
                           int32_t buf_b, AccPair acc) {
  if (code >= 0) ask(code, b, rule, o, cell, buf_a, buf_b, acc);
  else group_before(-code - 1, b, rule, o, cell, buf_a, buf_b, acc);
}

void RaceChecker::kv_read_before_write(int32_t code, int32_t w, int32_t o, const Box& cell) {
  auto one = [&](int32_t t) {  // KV rule: every reader of an appended cache comes after every append
    cx_.sink.error("race.kv", task_ref(p_, t) + " reads KV cache " + where(o, cell) + ", which " + task_ref(p_, w) +
                                  " appends this pass, but it is not ordered after the append (it may read the cache "
                                  "before or while it is appended)", {t, w}, {o});
  };
  if (code >= 0) return one(code);
  const Group& gr = groups_[-code - 1];
  for (int32_t k = gr.first; k <= gr.last; ++k) one(m_.accesses[object_begin_ + k].task);
}

// The walk over one cell's steps in hb order. Write events are a plain writer or a run of
// consecutive accumulates; readers sit between them. Each reader comes after every member of the
// event before it; each write event comes after the readers before it, else after the event
// before it (an accumulate reads, so it also needs a written value: race.unwritten-read when
// nothing wrote a transient cell before it). Consecutive pairs suffice since hb is transitive;
// two members of one accumulate run do not conflict, so they are never asked.
void RaceChecker::buffer_cell(int32_t o, const Box& cell, const int32_t* entries, int32_t n) {
  const BufferKind kind = p_.buffers[o].kind;
  const bool transient = buffer_kind_is_transient(kind);
  const bool kv = kind == BufferKind::KvCache;
  steps_.clear();
  bool any_write = false;
  for (int32_t i = 0; i < n; ++i) {
    if (entries[i] < 0) {
      steps_.push_back(Step{code_task(entries[i]), true, false, false, i, entries[i]});
      continue;
    }
    const ObjAccess& a = m_.accesses[m_.begin[o] + entries[i]];
    any_write |= a.write;
    const bool reads = !a.write || a.accumulate;
    if (!steps_.empty() && steps_.back().code == a.task) {
      Step& s = steps_.back();
      s.read |= reads;
      s.write |= a.write;
      s.acc = s.acc && a.accumulate;  // a plain access next to an accumulate makes it a plain read-modify-write
    } else {
      steps_.push_back(Step{a.task, reads, a.write, a.accumulate, i, a.task});
    }
  }
  if (!any_write && !transient) return;  // KV cache not appended here: prior-step state, no order needed
  auto members = [&](int32_t code, auto&& f) {  // each task of a step
    if (code >= 0) return f(code);
    const Group& gr = groups_[-code - 1];
    for (int32_t k = gr.first; k <= gr.last; ++k) f(m_.accesses[object_begin_ + k].task);
  };
  bool prev_acc = false;  // prev_ is a run of accumulates
  prev_.clear();
  readers_.clear();
  for (const Step& s : steps_) {
    if (s.acc) {
      const bool joins_run = prev_acc && readers_.empty();
      if (!joins_run) {  // a new run: it comes after these, and so does every later member
        run_readers_ = readers_;
        run_gate_ = prev_;
      }
      if (!run_readers_.empty()) {
        for (int32_t r : run_readers_) {
          if (kv) kv_read_before_write(r, s.task, o, cell);
          else ask_code(r, s.task, "race.accumulate", o, cell, o, o, AccPair::AfterRead);
        }
      } else if (!run_gate_.empty()) {  // a plain writer: a run never directly follows a run
        for (int32_t w : run_gate_) ask(w, s.task, "race.accumulate", o, cell, o, o, AccPair::AfterWrite);
      } else if (transient && !joins_run) {
        // Only the run's first member surely adds to nothing; a later one may follow an earlier
        // member (which then counts as its writer) or not, and the program is rejected either way.
        unwritten(o, cell, s.task, entries + s.first, n - s.first, true);
      }
      if (!joins_run) prev_.clear();
      prev_.push_back(s.task);
      prev_acc = true;
      readers_.clear();
      continue;
    }
    if (s.read) {
      const char* rule = prev_acc ? "race.accumulate" : kv && !s.write ? "race.kv" : "race.raw";
      const AccPair acc = !prev_acc ? AccPair::None : s.write ? AccPair::WriteAfter : AccPair::ReadAfter;
      if (!prev_.empty()) {
        // A writer that reads too is ordered after the event through the readers in between.
        for (int32_t w : prev_) {
          if (s.code < 0) group_after(w, -s.code - 1, rule, o, cell, o, o, acc);
          else if (!s.write || readers_.empty()) ask(w, s.task, rule, o, cell, o, o, acc);
        }
      } else if (transient) {
        members(s.code, [&](int32_t t) { unwritten(o, cell, t, entries + s.first, n - s.first, false); });
      }
    }
    if (s.write) {
      for (int32_t r : readers_) {
        if (kv) kv_read_before_write(r, s.task, o, cell);
        else ask_code(r, s.task, "race.war", o, cell, o, o);
      }
      if (readers_.empty() && !s.read)
        for (int32_t w : prev_)
          ask(w, s.task, prev_acc ? "race.accumulate" : "race.waw", o, cell, o, o,
              prev_acc ? AccPair::WriteAfter : AccPair::None);
      prev_.assign(1, s.task);
      prev_acc = false;
      readers_.clear();
    } else if (s.read) {
      readers_.push_back(s.code);
    }
  }
}

void RaceChecker::object(int32_t o) {
  const int32_t begin = m_.begin[o], end = m_.begin[o + 1];
  if (begin == end) return;
  if (o < m_.n_buffers && buffer_kind_is_readonly(p_.buffers[o].kind)) return;  // write.readonly covers writes
  int32_t n_live = 0;
  while (begin + n_live < end && g_.completable[m_.accesses[begin + n_live].task]) ++n_live;
  if (n_live == 0) return;
  object_begin_ = begin;
  cells(o, n_live);
}

void RaceChecker::run() {
  for (int32_t o = 0; o < m_.n_objects(); ++o) object(o);
  for (const HbQuestion& h : q_.resolve()) report(h);
  cx_.stats.hb_queries = q_.asked();
}

void check_races(Context& cx, const Firing& firing, const HbGraph& g) {
  std::vector<int32_t> sequence = g.task_order;  // completable tasks in hb order, then the stuck ones
  for (int32_t t = 0; t < cx.ix.n_tasks; ++t)
    if (!firing.fired[t]) sequence.push_back(t);
  const MemObjects m = build_objects(cx.ix, sequence);
  check_outputs(cx, m);
  check_onchip(cx, m);
  RaceChecker(cx, g, m).run();
}

}  // namespace amk::ir::detail
