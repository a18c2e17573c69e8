// ir/hb_adversarial.cpp: simulate_adversarial, the dynamic backstop to the static race proof.
// A seeded (std::mt19937_64) executor with separate start and end events: any ready task may
// start, many run at once, and they complete in random order. Per memory cell it tracks the
// accesses in flight and the last completed writer, and reports overlapping conflicting accesses
// (two accumulates of one buffer do not conflict; an accumulate conflicts with anything else),
// reads and accumulates of transient memory no completed task wrote, page clobbers, KV reads
// before the append, and tasks that never run. Every report is a real violation, so validate()
// must reject it.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "ir/graph.h"
#include "ir/validate_diag.h"
#include "ir/validate_objects.h"

namespace amk::ir {
namespace {

using detail::kNone;

struct Cells {  // per access: the cells it covers, numbered globally
  std::vector<int32_t> begin, cell;
  int32_t n_cells = 0;
};

Cells build_cells(const detail::MemObjects& m) {
  Cells cs;
  cs.begin.assign(m.accesses.size() + 1, 0);
  std::vector<int64_t> rows, cols;
  for (int32_t o = 0; o < m.n_objects(); ++o) {
    rows.clear();
    cols.clear();
    for (int32_t k = m.begin[o]; k < m.begin[o + 1]; ++k)
      for (int32_t x = m.accesses[k].box_begin; x < m.accesses[k].box_end; ++x) {
        rows.insert(rows.end(), {m.boxes[x].r0, m.boxes[x].r1});
        cols.insert(cols.end(), {m.boxes[x].c0, m.boxes[x].c1});
      }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    const auto nc = static_cast<int64_t>(cols.size()) - 1;
    auto lb = [](const std::vector<int64_t>& v, int64_t x) { return std::lower_bound(v.begin(), v.end(), x) - v.begin(); };
    for (int32_t k = m.begin[o]; k < m.begin[o + 1]; ++k) {
      for (int32_t x = m.accesses[k].box_begin; x < m.accesses[k].box_end; ++x) {
        const detail::Box& b = m.boxes[x];
        for (int64_t r = lb(rows, b.r0); r < lb(rows, b.r1); ++r)
          for (int64_t c = lb(cols, b.c0); c < lb(cols, b.c1); ++c)
            cs.cell.push_back(cs.n_cells + static_cast<int32_t>(r * nc + c));
      }
      cs.begin[k + 1] = static_cast<int32_t>(cs.cell.size());
    }
    if (!rows.empty()) cs.n_cells += static_cast<int32_t>((static_cast<int64_t>(rows.size()) - 1) * nc);
  }
  return cs;
}

class Adversary {
 public:
  Adversary(const Program& p, const detail::ProgramIndex& ix, const detail::MemObjects& m, const Cells& cs)
      : p_(p), ix_(ix), m_(m), cs_(cs), task_acc_(p.tasks.size()), object_of_(m.accesses.size()) {
    for (int32_t o = 0; o < m.n_objects(); ++o)
      for (int32_t k = m.begin[o]; k < m.begin[o + 1]; ++k) {
        task_acc_[m.accesses[k].task].push_back(k);
        object_of_[k] = o;
        if (o < m.n_buffers && p.buffers[o].kind == BufferKind::KvCache && m.accesses[k].write) appenders_[o].insert(m.accesses[k].task);
      }
  }
  void run(uint64_t seed, std::set<std::string>& out);

 private:
  void start(int32_t t, std::set<std::string>& out);
  void finish(int32_t t);
  std::string who(int32_t t) const { return detail::task_ref(p_, t); }
  std::string buf(int32_t b) const { return detail::buffer_ref(p_, b); }
  static const char* verb(const detail::ObjAccess& a) {
    return a.accumulate ? " accumulates into " : a.write ? " writes " : " reads ";
  }

  const Program& p_;
  const detail::ProgramIndex& ix_;
  const detail::MemObjects& m_;
  const Cells& cs_;
  std::vector<std::vector<int32_t>> task_acc_;
  std::vector<int32_t> object_of_;
  std::map<int32_t, std::set<int32_t>> appenders_;  // KV buffer -> its writers
  // Per run:
  std::vector<std::vector<int32_t>> in_flight_;  // per cell: accesses
  std::vector<int32_t> last_buffer_;             // per cell: buffer of the last completed write, or -1
  std::vector<std::vector<int32_t>> written_;    // per cell: buffers written so far
  std::vector<uint8_t> done_;
};

void Adversary::start(int32_t t, std::set<std::string>& out) {
  for (int32_t k : task_acc_[t]) {
    const detail::ObjAccess& a = m_.accesses[k];
    const int32_t o = object_of_[k];
    const bool page = o >= m_.n_buffers;
    for (int32_t i = cs_.begin[k]; i < cs_.begin[k + 1]; ++i) {
      const int32_t cell = cs_.cell[i];
      for (int32_t j : in_flight_[cell]) {
        const detail::ObjAccess& b = m_.accesses[j];
        if (!(a.write || b.write)) continue;
        if (page ? b.buffer == a.buffer : b.task == a.task) continue;  // same-buffer pairs live on the buffer
        if (!page && a.accumulate && b.accumulate) continue;          // adds commute: no order needed
        if (b.task == t)
          out.insert(who(t) + " reads and writes " + buf(a.buffer) + " / " + buf(b.buffer) + " on the same page bytes");
        else
          out.insert(who(t) + verb(a) + buf(a.buffer) + " while " + who(b.task) + verb(b) + buf(b.buffer) +
                     " over the same memory (both in flight)");
      }
      if (!a.write || a.accumulate) {  // an accumulate reads the value it adds to
        const BufferKind kind = p_.buffers[a.buffer].kind;
        const auto& w = written_[cell];
        const bool own = std::find(w.begin(), w.end(), a.buffer) != w.end();
        if (!page && buffer_kind_is_transient(kind) && !own)
          out.insert(who(t) + " reads " + buf(a.buffer) + " (" + std::string(buffer_kind_name(kind)) +
                     ") where no completed task has written it");
        if (page && own && last_buffer_[cell] != a.buffer)
          out.insert(who(t) + " reads " + buf(a.buffer) + " after " + buf(last_buffer_[cell]) +
                     " overwrote the page it shares");
      }
    }
    if (!a.write && !page && p_.buffers[a.buffer].kind == BufferKind::KvCache) {
      auto it = appenders_.find(a.buffer);
      if (it != appenders_.end() && !it->second.count(t))
        for (int32_t w : it->second)
          if (!done_[w]) out.insert(who(t) + " reads KV cache " + buf(a.buffer) + " before its append by " + who(w) + " completed");
    }
    for (int32_t i = cs_.begin[k]; i < cs_.begin[k + 1]; ++i) in_flight_[cs_.cell[i]].push_back(k);
  }
}

void Adversary::finish(int32_t t) {
  done_[t] = 1;
  for (int32_t k : task_acc_[t]) {
    const detail::ObjAccess& a = m_.accesses[k];
    for (int32_t i = cs_.begin[k]; i < cs_.begin[k + 1]; ++i) {
      const int32_t cell = cs_.cell[i];
      auto& fl = in_flight_[cell];
      fl.erase(std::find(fl.begin(), fl.end(), k));
      if (!a.write) continue;
      last_buffer_[cell] = a.buffer;
      if (std::find(written_[cell].begin(), written_[cell].end(), a.buffer) == written_[cell].end())
        written_[cell].push_back(a.buffer);
    }
  }
}

void Adversary::run(uint64_t seed, std::set<std::string>& out) {
  std::mt19937_64 rng(seed);
  const double p_start = std::uniform_real_distribution<double>(0.2, 0.95)(rng);
  in_flight_.assign(cs_.n_cells, {});
  last_buffer_.assign(cs_.n_cells, kNone);
  written_.assign(cs_.n_cells, {});
  const int32_t n = ix_.n_tasks;
  done_.assign(n, 0);
  std::vector<int64_t> value(ix_.n_counters, 0);
  std::vector<uint8_t> started(n, 0);
  std::vector<int32_t> ready, running;
  auto is_ready = [&](int32_t t) {
    if (started[t] || (ix_.queue_prev[t] != kNone && !done_[ix_.queue_prev[t]])) return false;
    for (int32_t s = ix_.wait_begin[t]; s < ix_.wait_begin[t + 1]; ++s) {
      const int32_t c = ix_.wait_counter[s];
      if (c == kNone || value[c] < ix_.wait_threshold[s]) return false;
    }
    return true;
  };
  for (int32_t t = 0; t < n; ++t)
    if (is_ready(t)) ready.push_back(t);
  int32_t n_started = 0;
  while (!ready.empty() || !running.empty()) {
    const bool do_start = !ready.empty() && (running.empty() || std::uniform_real_distribution<double>(0, 1)(rng) < p_start);
    auto& pool = do_start ? ready : running;
    const size_t i = std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng);
    const int32_t t = pool[i];
    pool[i] = pool.back();
    pool.pop_back();
    if (do_start) {
      started[t] = 1;
      ++n_started;
      start(t, out);
      running.push_back(t);
      continue;
    }
    finish(t);
    // Newly ready: waiters of t's counter and t's queue successor (checked once each here).
    if (const int32_t c = ix_.task_out[t]; c != kNone) {
      ++value[c];
      for (int32_t k = ix_.waiter_begin[c]; k < ix_.waiter_begin[c + 1]; ++k) {
        const int32_t w = ix_.wait_task[ix_.waiter_slot[k]];
        if (is_ready(w) && std::find(ready.begin(), ready.end(), w) == ready.end()) ready.push_back(w);
      }
    }
    const int32_t next = ix_.queue_next[t];
    if (next != kNone && is_ready(next) && std::find(ready.begin(), ready.end(), next) == ready.end()) ready.push_back(next);
  }
  if (n_started < n) {
    int32_t first = 0;
    while (started[first]) ++first;
    out.insert("deadlock: " + std::to_string(n - n_started) + " task(s) never ran, e.g. " + who(first));
  }
}

}  // namespace

std::vector<std::string> simulate_adversarial(const Program& program, int seeds) {
  const detail::ProgramIndex ix = detail::build_index(program);
  std::vector<int32_t> all(ix.n_tasks);
  for (int32_t t = 0; t < ix.n_tasks; ++t) all[t] = t;
  const detail::MemObjects m = detail::build_objects(ix, all);
  const Cells cs = build_cells(m);
  Adversary adv(program, ix, m, cs);
  std::set<std::string> found;
  for (int s = 0; s < seeds; ++s) adv.run(static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull + 1, found);
  return std::vector<std::string>(found.begin(), found.end());
}

}  // namespace amk::ir
