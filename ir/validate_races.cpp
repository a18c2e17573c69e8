// ir/validate_races.cpp: the race checks of docs/VALIDATION.md over buffer objects (race.raw,
// race.war, race.waw, race.unwritten-read, race.kv, race.partial-wait), driving the batched
// happens-before questions. Consecutive accesses of each cell are checked; a check implied by
// two others (writer -> reader -> next writer) is not asked again, since hb is transitive.
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

void RaceChecker::ask(int32_t a, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a, int32_t buf_b) {
  if (a == b || q_.direct(a, b)) return;
  // Neighbouring cells ask the same pairs; a small direct-mapped cache drops most repeats and
  // resolve() removes the rest.
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  uint64_t& slot = recent_[(key * 0x9E3779B97F4A7C15ull) >> 52];
  if (slot == key + 1) return;
  slot = key + 1;
  why_.push_back(Why{rule, o, cell, buf_a, buf_b});
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
                              int32_t buf_b) {
  Group& gr = groups_[g];
  const ObjAccess* acc = m_.accesses.data() + object_begin_;
  if (!gr.joins_known) {  // counters joined (all-join) by every member
    gr.joins_known = true;
    const int32_t t0 = acc[gr.first].task;
    for (int32_t s = cx_.ix.wait_begin[t0]; s < cx_.ix.wait_begin[t0 + 1]; ++s) {
      const int32_t c = cx_.ix.wait_counter[s];
      bool all = cx_.ix.wait_threshold[s] >= 1 && !g_.wait_partial[s];
      for (int32_t k = gr.first + 1; all && k <= gr.last; ++k) all = joins(acc[k].task, c);
      if (all) gr.joins.push_back(c);
    }
  }
  const int32_t c = cx_.ix.task_out[a];
  if (std::find(gr.joins.begin(), gr.joins.end(), c) != gr.joins.end()) {
    q_.count();  // a -> hub(c) -> every member
    return;
  }
  for (int32_t k = gr.first; k <= gr.last; ++k) ask(a, acc[k].task, rule, o, cell, buf_a, buf_b);
}

void RaceChecker::group_before(int32_t g, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a,
                               int32_t buf_b) {
  Group& gr = groups_[g];
  const ObjAccess* acc = m_.accesses.data() + object_begin_;
  if (gr.signal == -2) {
    gr.signal = cx_.ix.task_out[acc[gr.first].task];
    for (int32_t k = gr.first + 1; k <= gr.last && gr.signal != -1; ++k)
      if (cx_.ix.task_out[acc[k].task] != gr.signal) gr.signal = -1;
  }
  if (gr.signal >= 0 && joins(b, gr.signal)) {
    q_.count();  // every member -> hub(signal) -> b
    return;
  }
  for (int32_t k = gr.first; k <= gr.last; ++k) ask(acc[k].task, b, rule, o, cell, buf_a, buf_b);
}

void RaceChecker::ask_code(int32_t code, int32_t b, const char* rule, int32_t o, const Box& cell, int32_t buf_a,
                           int32_t buf_b) {
  if (code >= 0) ask(code, b, rule, o, cell, buf_a, buf_b);
  else group_before(-code - 1, b, rule, o, cell, buf_a, buf_b);
}

void RaceChecker::unwritten(int32_t o, const Box& cell, int32_t t, const int32_t* entries, int32_t n) {
  const char* rule = "race.unwritten-read";
  if (!cx_.sink.wants(rule)) return cx_.sink.count_only(rule);
  int32_t later = kNone;
  bool self = false;
  for (int32_t i = 0; i < n && later == kNone; ++i) {
    if (entries[i] < 0) continue;  // reader groups never write
    const ObjAccess& a = m_.accesses[m_.begin[o] + entries[i]];
    if (!a.write) continue;
    if (a.task == t) self = true;
    else later = a.task;
  }
  std::string msg = task_ref(p_, t) + " reads " + where(o, cell) + " (" +
                    std::string(buffer_kind_name(p_.buffers[o].kind)) + ")";
  if (later != kNone)
    msg += " before any write to it: its writer " + task_ref(p_, later) + " is not ordered before the read";
  else if (self)
    msg += ", which only it writes: a task's reads happen before its own writes, so it reads stale memory";
  else
    msg += ", which no task writes";
  if (later != kNone) cx_.sink.error(rule, msg, {t, later}, {o});
  else cx_.sink.error(rule, msg, {t}, {o});
}

void RaceChecker::buffer_cell(int32_t o, const Box& cell, const int32_t* entries, int32_t n) {
  const BufferKind kind = p_.buffers[o].kind;
  const bool transient = buffer_kind_is_transient(kind);
  const bool kv = kind == BufferKind::KvCache;
  steps_.clear();
  bool any_write = false;
  for (int32_t i = 0; i < n; ++i) {
    if (entries[i] < 0) {
      steps_.push_back(Step{code_task(entries[i]), true, false, i, entries[i]});
      continue;
    }
    const ObjAccess& a = m_.accesses[m_.begin[o] + entries[i]];
    any_write |= a.write;
    if (!steps_.empty() && steps_.back().code == a.task) {
      steps_.back().read |= !a.write;
      steps_.back().write |= a.write;
    } else {
      steps_.push_back(Step{a.task, !a.write, a.write, i, a.task});
    }
  }
  if (!any_write && !transient) return;  // KV cache not appended here: prior-step state, no order needed
  auto members = [&](int32_t code, auto&& f) {  // each task of a step
    if (code >= 0) return f(code);
    const Group& gr = groups_[-code - 1];
    for (int32_t k = gr.first; k <= gr.last; ++k) f(m_.accesses[object_begin_ + k].task);
  };
  int32_t last = kNone;
  readers_.clear();
  for (const Step& s : steps_) {
    if (s.read) {
      const char* rule = kv && !s.write ? "race.kv" : "race.raw";
      if (last != kNone) {
        // A writer that reads too is ordered after `last` through the readers in between.
        if (s.code < 0) group_after(last, -s.code - 1, rule, o, cell, o, o);
        else if (!s.write || readers_.empty()) ask(last, s.task, rule, o, cell, o, o);
      } else if (transient) {
        members(s.code, [&](int32_t t) { unwritten(o, cell, t, entries + s.first, n - s.first); });
      }
    }
    if (s.write) {
      for (int32_t r : readers_) {
        if (!kv) {
          ask_code(r, s.task, "race.war", o, cell, o, o);
          continue;
        }
        members(r, [&](int32_t t) {  // KV rule: every reader of an appended cache comes after every append
          cx_.sink.error("race.kv", task_ref(p_, t) + " reads KV cache " + where(o, cell) + ", which " +
                                        task_ref(p_, s.task) + " appends this pass, but it is not ordered after the "
                                        "append (it may read the cache before or while it is appended)", {t, s.task}, {o});
        });
      }
      if (readers_.empty() && last != kNone && !s.read) ask(last, s.task, "race.waw", o, cell, o, o);
      last = s.task;
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

void RaceChecker::report(const HbQuestion& h) {
  const Why& w = why_[h.context];
  std::string rule = w.rule;
  const int32_t a = h.a, b = h.b;
  // A failed order whose later task has a partial wait on a counter that `a` feeds (directly or
  // through a producer's ancestry) is the first-t-of-N race: name the wait.
  if (rule != "page.clobber") {
    for (int32_t s = cx_.ix.wait_begin[b]; s < cx_.ix.wait_begin[b + 1]; ++s) {
      if (!g_.wait_partial[s]) continue;
      const int32_t c = cx_.ix.wait_counter[s];
      bool feeds = cx_.ix.task_out[a] == c;
      for (int32_t k = cx_.ix.prod_begin[c]; !feeds && cx_.sink.wants("race.partial-wait") && k < cx_.ix.prod_begin[c + 1]; ++k)
        feeds = g_.completable[cx_.ix.prod[k]] && q_.ordered(a, cx_.ix.prod[k]);
      if (!feeds) continue;
      const std::string msg = task_ref(p_, b) + " waits on " + counter_ref(p_, c) + " >= " +
                              std::to_string(cx_.ix.wait_threshold[s]) + " of its " + std::to_string(g_.n_producers[c]) +
                              " producers, which other producers can satisfy first, so nothing orders it after " +
                              task_ref(p_, a) + " (" + w.rule + " on " + where(w.object, w.cell) + ")";
      cx_.sink.error("race.partial-wait", msg, {a, b}, {w.buf_a}, {c});
      return;
    }
  }
  if (!cx_.sink.wants(rule)) return cx_.sink.count_only(rule);
  const std::string place = where(w.object, w.cell);
  std::string msg;
  if (rule == "race.raw")
    msg = task_ref(p_, b) + " reads " + place + " written by " + task_ref(p_, a) +
          ", but no happens-before path orders the read after the write (they can run concurrently)";
  else if (rule == "race.war")
    msg = task_ref(p_, b) + " writes " + place + " while " + task_ref(p_, a) +
          " may still read it: nothing orders the write after the read";
  else if (rule == "race.waw")
    msg = task_ref(p_, a) + " and " + task_ref(p_, b) + " both write " + place + " and nothing orders the two writes";
  else if (rule == "race.kv")
    msg = task_ref(p_, b) + " reads KV cache " + place + ", which " + task_ref(p_, a) +
          " appends this pass, but is not ordered after the append";
  else
    msg = task_ref(p_, a) + " uses " + buffer_ref(p_, w.buf_a) + " and " + task_ref(p_, b) + " writes " +
          buffer_ref(p_, w.buf_b) + "; both live in " + place + " and nothing orders them (page reused too early)";
  if (w.buf_a != w.buf_b) cx_.sink.error(rule, msg, {a, b}, {w.buf_a, w.buf_b});
  else cx_.sink.error(rule, msg, {a, b}, {w.buf_a});
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
