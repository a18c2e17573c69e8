// ir/validate.cpp: validate() runs the passes of validate_checks.h in order and never throws.
// Structural passes always run; the graph passes (deadlock, happens-before, races) run whenever
// ids are dense and references resolve, whatever the program's size (docs/VALIDATION.md).
#include "ir/validate.h"

#include <exception>
#include <unordered_set>

#include "ir/hb_graph.h"
#include "ir/validate_checks.h"

namespace amk::ir {
namespace {

void basic_stats(detail::Context& cx) {
  const Program& p = cx.program;
  const detail::ProgramIndex& ix = cx.ix;
  ValidationStats& st = cx.stats;
  st.tasks = static_cast<int64_t>(p.tasks.size());
  st.buffers = static_cast<int64_t>(p.buffers.size());
  st.counters = static_cast<int64_t>(p.counters.size());
  for (int32_t t = 0; t < ix.n_tasks; ++t) {
    if (!p.tasks[t].sm) ++st.unassigned_tasks;
    else if (ix.queue_prev[t] == detail::kNone) ++st.sms_used;  // first task of its queue
    for (int32_t s = ix.wait_begin[t]; s < ix.wait_begin[t + 1]; ++s)
      if (ix.wait_counter[s] != detail::kNone) st.edges += ix.producer_count(ix.wait_counter[s]);
  }
  st.weight_bytes = p.total_weight_bytes();
  if (p.pages) st.scratch_bytes = p.pages->total_scratch_bytes();
}

ValidationResult run(const Program& program) {
  detail::Context cx(program);
  basic_stats(cx);
  detail::check_ids(cx);
  detail::check_version(cx);
  detail::check_buffers(cx);
  detail::check_sources(cx);
  detail::check_counters(cx);
  detail::check_tasks(cx);
  detail::check_pages(cx);
  detail::check_meta(cx);
  for (int32_t t = 0; t < cx.ix.n_tasks; ++t) {
    detail::check_params(cx, t);
    detail::check_shapes(cx, t);
  }
  if (cx.integrity_ok) {
    const detail::Firing firing = detail::fire_all(cx.ix);
    detail::check_deadlock(cx, firing);
    const detail::HbGraph hb = detail::build_hb_graph(cx.ix, firing);
    cx.stats.critical_path = hb.critical_path;
    if (hb.acyclic)
      detail::check_races(cx, firing, hb);
    else
      cx.sink.error("internal", "the happens-before graph has a cycle; this is a bug in amk's validator");
  } else {
    cx.sink.warning("analysis.skipped", "deadlock and race analysis need dense ids and resolved references; "
                                        "fix the errors above and validate again");
  }
  ValidationResult r;
  cx.sink.finish(r);
  r.stats = cx.stats;
  r.ok = r.errors.empty();
  return r;
}

}  // namespace

ValidationResult validate(const Program& program) noexcept {
  try {
    return run(program);
  } catch (const std::exception& e) {
    ValidationResult r;
    r.errors.push_back(Diagnostic{Severity::Error, "internal", std::string("validate() failed: ") + e.what(), {}, {}, {}});
    return r;
  } catch (...) {
    ValidationResult r;
    r.errors.push_back(Diagnostic{Severity::Error, "internal", "validate() failed with an unknown exception", {}, {}, {}});
    return r;
  }
}

}  // namespace amk::ir
