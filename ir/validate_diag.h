// ir/validate_diag.h: how validate() names things and collects diagnostics (internal).
// Every message names tasks as `task 17 (l0.q.t3)`, buffers as `buffer 4 "h_norm"`, counters as
// `counter 3` plus their note; entities are given by position and stored in the Diagnostic by id.
// Each rule keeps its first kRuleCap diagnostics; the rest are counted in one closing line, so a
// systematically broken million-task program still yields a readable report.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/access.h"
#include "ir/validate.h"

namespace amk::ir::detail {

inline constexpr int kRuleCap = 100;

/// `task 17 (l0.q.t3)` for the task at position `t`.
std::string task_ref(const Program& p, int32_t t);
/// `buffer 4 "h_norm"` for the buffer at position `b`.
std::string buffer_ref(const Program& p, int32_t b);
/// `counter 3` or `counter 3 ("qkv done")` for the counter at position `c`.
std::string counter_ref(const Program& p, int32_t c);
/// `page 2` for the page at position `g`.
std::string page_ref(const Program& p, int32_t g);
/// ` rows [a, b) cols [c, d)` for a region (empty text for the whole `view`).
std::string region_text(const Region& r, const MatrixView& view);

/// Collects diagnostics with per-rule caps.
class DiagSink {
 public:
  explicit DiagSink(const Program& p) : program_(p) {}
  /// Record an error; entity lists are positions. Returns false when the rule is over its cap
  /// (the caller may then skip building expensive context).
  bool error(const std::string& rule, const std::string& message, const std::vector<int32_t>& tasks = {},
             const std::vector<int32_t>& buffers = {}, const std::vector<int32_t>& counters = {});
  void warning(const std::string& rule, const std::string& message, const std::vector<int32_t>& tasks = {},
               const std::vector<int32_t>& buffers = {}, const std::vector<int32_t>& counters = {});
  /// True when another error of `rule` would still be listed.
  bool wants(const std::string& rule) const;
  /// Count an error of `rule` without a message (over the cap).
  void count_only(const std::string& rule);
  int64_t error_count() const { return errors_total_; }
  /// Move everything into `result`, adding one "N more" line per capped rule.
  void finish(ValidationResult& result);

 private:
  void add(Severity sev, const std::string& rule, const std::string& message, const std::vector<int32_t>& tasks,
           const std::vector<int32_t>& buffers, const std::vector<int32_t>& counters);
  const Program& program_;
  std::vector<Diagnostic> errors_, warnings_;
  std::map<std::string, int64_t> seen_;     // per rule and severity ("E:" / "W:" prefix)
  int64_t errors_total_ = 0;
};

}  // namespace amk::ir::detail
