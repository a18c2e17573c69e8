// tools/bench/trace_summary.cpp: see trace_summary.h.
#include "tools/bench/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "ir/enums.h"

namespace amk::bench {
namespace {

struct OpTotals {
  int count = 0;
  double run_us = 0.0, wait_us = 0.0, max_run_us = 0.0;
};

struct StageSpan {
  int32_t counter = -1;
  double begin_us = 0.0, end_us = 0.0;  ///< first run begin, last end (relative to the launch)
  int tasks = 0;
  std::string label;  ///< the first task's label
};

std::string fmt(const char* f, double a, double b = 0.0, double c = 0.0, double d = 0.0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

std::string summarize_trace(const ir::Program& program, const vm::LaunchTrace& trace, int slowest_stages) {
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (const vm::TaskTiming& r : trace.records) {
    if (r.t_end == 0) continue;
    t0 = std::min(t0, r.t_wait_begin);
    t1 = std::max(t1, r.t_end);
  }
  if (t0 == UINT64_MAX) return "trace: no task ran\n";
  const auto us = [&](uint64_t t) { return static_cast<double>(t - t0) / 1000.0; };
  const double span = us(t1);

  std::map<std::string, OpTotals> ops;
  std::map<int32_t, StageSpan> stages;
  std::map<int32_t, double> busy;  // worker -> run us
  for (const vm::TaskTiming& r : trace.records) {
    if (r.t_end == 0 || r.task < 0 || static_cast<size_t>(r.task) >= program.tasks.size()) continue;
    const ir::Task& t = program.tasks[static_cast<size_t>(r.task)];
    std::string name(ir::opcode_name(t.op));
    if (t.op == ir::Opcode::Fused) name += "/" + t.params.get_string("recipe").value_or("?");
    OpTotals& o = ops[name];
    const double run = us(r.t_end) - us(r.t_run_begin), wait = us(r.t_run_begin) - us(r.t_wait_begin);
    ++o.count;
    o.run_us += run;
    o.wait_us += wait;
    o.max_run_us = std::max(o.max_run_us, run);
    busy[r.worker] += run;
    const int32_t c = static_cast<int32_t>(t.out_counter.value);
    StageSpan& st = stages[c];
    if (st.tasks == 0) {
      st = StageSpan{c, us(r.t_run_begin), us(r.t_end), 0, t.label};
    } else {
      st.begin_us = std::min(st.begin_us, us(r.t_run_begin));
      st.end_us = std::max(st.end_us, us(r.t_end));
    }
    ++st.tasks;
  }

  std::ostringstream out;
  double busy_total = 0.0;
  for (const auto& [w, b] : busy) busy_total += b;
  const double workers = static_cast<double>(std::max<size_t>(busy.size(), 1));
  out << fmt("launch span %.1f us on %.0f workers; workers busy %.1f%% of the span on average\n", span, workers,
             100.0 * busy_total / (workers * std::max(span, 1e-9)));
  out << "opcode                 tasks   run us total   run us mean   run us max   wait us mean\n";
  for (const auto& [name, o] : ops) {
    char line[200];
    std::snprintf(line, sizeof line, "%-20s %7d %14.1f %13.2f %12.2f %14.2f\n", name.c_str(), o.count, o.run_us,
                  o.run_us / o.count, o.max_run_us, o.wait_us / o.count);
    out << line;
  }
  std::vector<StageSpan> by_len;
  for (const auto& [c, st] : stages) by_len.push_back(st);
  std::sort(by_len.begin(), by_len.end(),
            [](const StageSpan& a, const StageSpan& b) { return a.end_us - a.begin_us > b.end_us - b.begin_us; });
  out << fmt("%.0f stages; the slowest (first run begin -> last end):\n", static_cast<double>(stages.size()));
  for (int i = 0; i < slowest_stages && i < static_cast<int>(by_len.size()); ++i) {
    const StageSpan& st = by_len[static_cast<size_t>(i)];
    out << fmt("  %8.1f us  [%9.1f, %9.1f]", st.end_us - st.begin_us, st.begin_us, st.end_us) << "  " << st.tasks
        << " task(s), counter " << st.counter << ", e.g. " << st.label << "\n";
  }
  return out.str();
}

}  // namespace amk::bench
