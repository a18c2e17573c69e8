// ir/validate_diag.cpp: entity naming and the capped diagnostic collector of validate_diag.h,
// plus ValidationResult::report().
#include "ir/validate_diag.h"

#include <sstream>

namespace amk::ir {
namespace detail {

std::string task_ref(const Program& p, int32_t t) {
  const Task& task = p.tasks[t];
  return "task " + std::to_string(task.id.value) + " (" + (task.label.empty() ? "<unlabelled>" : task.label) + ")";
}

std::string buffer_ref(const Program& p, int32_t b) {
  const Buffer& buf = p.buffers[b];
  return "buffer " + std::to_string(buf.id.value) + " \"" + buf.name + "\"";
}

std::string counter_ref(const Program& p, int32_t c) {
  const Counter& ctr = p.counters[c];
  std::string s = "counter " + std::to_string(ctr.id.value);
  if (!ctr.note.empty()) s += " (\"" + ctr.note + "\")";
  return s;
}

std::string page_ref(const Program& p, int32_t g) { return "page " + std::to_string(p.pages->pages[g].id.value); }

std::string region_text(const Region& r, const MatrixView& view) {
  const bool all_rows = r.row_begin <= 0 && r.row_end >= view.rows;
  const bool all_cols = r.col_begin <= 0 && r.col_end >= view.cols;
  std::string s;
  if (!all_rows) s += " rows [" + std::to_string(r.row_begin) + ", " + std::to_string(r.row_end) + ")";
  if (!all_cols) s += " cols [" + std::to_string(r.col_begin) + ", " + std::to_string(r.col_end) + ")";
  return s;
}

bool DiagSink::wants(const std::string& rule) const {
  auto it = seen_.find("E:" + rule);
  return it == seen_.end() || it->second < kRuleCap;
}

void DiagSink::count_only(const std::string& rule) {
  ++seen_["E:" + rule];
  ++errors_total_;
}

bool DiagSink::error(const std::string& rule, const std::string& message, const std::vector<int32_t>& tasks,
                     const std::vector<int32_t>& buffers, const std::vector<int32_t>& counters) {
  const bool listed = wants(rule);
  add(Severity::Error, rule, message, tasks, buffers, counters);
  return listed;
}

void DiagSink::warning(const std::string& rule, const std::string& message, const std::vector<int32_t>& tasks,
                       const std::vector<int32_t>& buffers, const std::vector<int32_t>& counters) {
  add(Severity::Warning, rule, message, tasks, buffers, counters);
}

void DiagSink::add(Severity sev, const std::string& rule, const std::string& message,
                   const std::vector<int32_t>& tasks, const std::vector<int32_t>& buffers,
                   const std::vector<int32_t>& counters) {
  const bool is_error = sev == Severity::Error;
  if (is_error) ++errors_total_;
  int64_t& n = seen_[(is_error ? "E:" : "W:") + rule];
  if (n++ >= kRuleCap) return;
  Diagnostic d;
  d.severity = sev;
  d.rule = rule;
  d.message = message;
  for (int32_t t : tasks) d.tasks.push_back(program_.tasks[t].id);
  for (int32_t b : buffers) d.buffers.push_back(program_.buffers[b].id);
  for (int32_t c : counters) d.counters.push_back(program_.counters[c].id);
  (is_error ? errors_ : warnings_).push_back(std::move(d));
}

void DiagSink::finish(ValidationResult& result) {
  for (const auto& [key, n] : seen_) {
    if (n <= kRuleCap) continue;
    const bool is_error = key[0] == 'E';
    Diagnostic d;
    d.severity = is_error ? Severity::Error : Severity::Warning;
    d.rule = key.substr(2);
    d.message = std::to_string(n - kRuleCap) + " more " + d.rule + " diagnostics not listed (" +
                std::to_string(n) + " in all)";
    (is_error ? errors_ : warnings_).push_back(std::move(d));
  }
  for (auto& d : errors_) result.errors.push_back(std::move(d));
  for (auto& d : warnings_) result.warnings.push_back(std::move(d));
  errors_.clear();
  warnings_.clear();
}

}  // namespace detail

namespace {

// The closing line of a capped rule ("N more <rule> diagnostics not listed") stands for N errors.
int64_t diagnostics_represented(const Diagnostic& d) {
  const std::string tail = " more " + d.rule + " diagnostics not listed";
  const auto p = d.message.find(tail);
  if (p == std::string::npos || p == 0 || !d.tasks.empty()) return 1;
  for (size_t i = 0; i < p; ++i)
    if (d.message[i] < '0' || d.message[i] > '9') return 1;
  return std::stoll(d.message.substr(0, p));
}

}  // namespace

std::string ValidationResult::report() const {
  std::ostringstream os;
  int64_t n_errors = 0, n_warnings = 0;
  for (const Diagnostic& d : errors) n_errors += diagnostics_represented(d);
  for (const Diagnostic& d : warnings) n_warnings += diagnostics_represented(d);
  if (ok) {
    os << "ACCEPTED";
  } else {
    os << "REJECTED: " << n_errors << (n_errors == 1 ? " error" : " errors");
  }
  if (n_warnings > 0) os << ", " << n_warnings << (n_warnings == 1 ? " warning" : " warnings");
  os << "\n";
  for (const Diagnostic& d : errors) os << "error[" << d.rule << "]: " << d.message << "\n";
  for (const Diagnostic& d : warnings) os << "warning[" << d.rule << "]: " << d.message << "\n";
  os << "stats: tasks=" << stats.tasks << " buffers=" << stats.buffers << " counters=" << stats.counters
     << " edges=" << stats.edges << " sms_used=" << stats.sms_used << " unassigned=" << stats.unassigned_tasks
     << " critical_path=" << stats.critical_path << " weight_bytes=" << stats.weight_bytes
     << " scratch_bytes=" << stats.scratch_bytes << " hb_queries=" << stats.hb_queries << "\n";
  return os.str();
}

}  // namespace amk::ir
