// ir/validate_race_report.cpp: the wording of the race checker's diagnostics (race.raw, race.war,
// race.waw, race.kv, race.accumulate, race.partial-wait, race.unwritten-read, page.clobber). Each
// message names both tasks, the buffer (and the cell when it is not the whole buffer), and what
// would order them; an access unordered with an accumulate says which accumulating task it may
// overlap and how to wait for all of them (docs/VALIDATION.md).
#include "ir/validate_races.h"

namespace amk::ir::detail {

std::string RaceChecker::all_join_hint(int32_t a) const {
  const int32_t c = cx_.ix.task_out[a];
  return "every task that accumulates into a region must complete before anything else reads or stores it: "
         "wait for all of them with an all-join (here " + counter_ref(p_, c) + " >= " +
         std::to_string(g_.n_producers[c]) + ", the counter " + task_ref(p_, a) + " signals)";
}

std::string RaceChecker::order_message(const Why& w, int32_t a, int32_t b) const {
  const std::string rule = w.rule;
  const std::string place = where(w.object, w.cell);
  if (rule == "race.accumulate") {
    switch (w.acc) {
      case AccPair::ReadAfter:
        return task_ref(p_, b) + " reads " + place + ", which " + task_ref(p_, a) +
               " accumulates into, but nothing orders the read after that accumulate (it may read a partial sum); " +
               all_join_hint(a);
      case AccPair::WriteAfter:
        return task_ref(p_, b) + " writes " + place + " while " + task_ref(p_, a) +
               " may still accumulate into it: nothing orders the write after the accumulate; " + all_join_hint(a);
      case AccPair::AfterWrite:
        return task_ref(p_, b) + " accumulates into " + place + " written by " + task_ref(p_, a) +
               ", but nothing orders the accumulate after the write (an accumulate adds to the value there, so it "
               "reads it)";
      case AccPair::AfterRead:
      case AccPair::None:
        // Either the read wants the value before the adds, or (the fold's case) their sum.
        return task_ref(p_, b) + " accumulates into " + place + " while " + task_ref(p_, a) +
               " may still read it: nothing orders the accumulate after the read, nor the read after the "
               "accumulate; " + all_join_hint(b);
    }
  }
  if (rule == "race.raw")
    return task_ref(p_, b) + " reads " + place + " written by " + task_ref(p_, a) +
           ", but no happens-before path orders the read after the write (they can run concurrently)";
  if (rule == "race.war")
    return task_ref(p_, b) + " writes " + place + " while " + task_ref(p_, a) +
           " may still read it: nothing orders the write after the read";
  if (rule == "race.waw")
    return task_ref(p_, a) + " and " + task_ref(p_, b) + " both write " + place + " and nothing orders the two writes";
  if (rule == "race.kv")
    return task_ref(p_, b) + " reads KV cache " + place + ", which " + task_ref(p_, a) +
           " appends this pass, but is not ordered after the append";
  return task_ref(p_, a) + " uses " + buffer_ref(p_, w.buf_a) + " and " + task_ref(p_, b) + " writes " +
         buffer_ref(p_, w.buf_b) + "; both live in " + place + " and nothing orders them (page reused too early)";
}

int32_t RaceChecker::partial_wait_fed_by(int32_t waiter, int32_t fed_by) {
  for (int32_t s = cx_.ix.wait_begin[waiter]; s < cx_.ix.wait_begin[waiter + 1]; ++s) {
    if (!g_.wait_partial[s]) continue;
    const int32_t c = cx_.ix.wait_counter[s];
    bool feeds = cx_.ix.task_out[fed_by] == c;
    for (int32_t k = cx_.ix.prod_begin[c]; !feeds && cx_.sink.wants("race.partial-wait") && k < cx_.ix.prod_begin[c + 1]; ++k)
      feeds = g_.completable[cx_.ix.prod[k]] && q_.ordered(fed_by, cx_.ix.prod[k]);
    if (feeds) return s;
  }
  return kNone;
}

void RaceChecker::report(const HbQuestion& h) {
  const Why& w = why_[h.context];
  std::string rule = w.rule;
  const int32_t a = h.a, b = h.b;
  // A failed order whose later task has a partial wait on a counter that `a` feeds (directly or
  // through a producer's ancestry) is the first-t-of-N race: name the wait. A reader that the
  // hb order puts before an accumulate (AfterRead) is judged the same way the other way round:
  // its partial wait on the accumulates' counter is why it is not after them.
  if (rule != "page.clobber") {
    int32_t waiter = b, fed_by = a, acc_task = kNone;
    int32_t s = partial_wait_fed_by(b, a);
    if (w.acc == AccPair::ReadAfter || w.acc == AccPair::WriteAfter) acc_task = a;
    if (s == kNone && w.acc == AccPair::AfterRead) {
      waiter = a;
      fed_by = acc_task = b;
      s = partial_wait_fed_by(a, b);
    }
    if (s != kNone) {
      const int32_t c = cx_.ix.wait_counter[s];
      std::string msg = task_ref(p_, waiter) + " waits on " + counter_ref(p_, c) + " >= " +
                        std::to_string(cx_.ix.wait_threshold[s]) + " of its " + std::to_string(g_.n_producers[c]) +
                        " producers, which other producers can satisfy first, so nothing orders it after " +
                        task_ref(p_, fed_by) + " (" + w.rule + " on " + where(w.object, w.cell) + ")";
      // Ordered after only some of the tasks accumulating into the region: the all-join it needs.
      if (acc_task != kNone) msg += "; " + all_join_hint(acc_task);
      cx_.sink.error("race.partial-wait", msg, {a, b}, {w.buf_a}, {c});
      return;
    }
  }
  if (!cx_.sink.wants(rule)) return cx_.sink.count_only(rule);
  const std::string msg = order_message(w, a, b);
  if (w.buf_a != w.buf_b) cx_.sink.error(rule, msg, {a, b}, {w.buf_a, w.buf_b});
  else cx_.sink.error(rule, msg, {a, b}, {w.buf_a});
}

void RaceChecker::unwritten(int32_t o, const Box& cell, int32_t t, const int32_t* entries, int32_t n, bool acc) {
  const char* rule = "race.unwritten-read";
  if (!cx_.sink.wants(rule)) return cx_.sink.count_only(rule);
  // The first later plain writer of another task (an accumulate gives no value of its own).
  int32_t later = kNone;
  bool self = false, accumulated = false;
  for (int32_t i = 0; i < n && later == kNone; ++i) {
    if (entries[i] < 0) continue;  // reader groups never write
    const ObjAccess& a = m_.accesses[m_.begin[o] + entries[i]];
    if (!a.write) continue;
    if (a.accumulate) accumulated |= a.task != t;
    else if (a.task == t) self = true;
    else later = a.task;
  }
  std::string msg = task_ref(p_, t) + (acc ? " accumulates into " : " reads ") + where(o, cell) + " (" +
                    std::string(buffer_kind_name(p_.buffers[o].kind)) + ")";
  const char* what = acc ? "accumulate" : "read";
  if (later != kNone)
    msg += " before any write to it: its writer " + task_ref(p_, later) + " is not ordered before the " + what;
  else if (self)
    msg += ", which only it writes: a task's reads happen before its own writes, so it reads stale memory";
  else if (acc || accumulated)
    msg += ", which no task writes before it: an accumulate adds to the value there, so a task ordered before "
           "every accumulate must write the region first";
  else
    msg += ", which no task writes";
  if (later != kNone) cx_.sink.error(rule, msg, {t, later}, {o});
  else cx_.sink.error(rule, msg, {t}, {o});
}

}  // namespace amk::ir::detail
