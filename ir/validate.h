// ir/validate.h: the static proof that a program is safe to launch (IR spec section 3 plus the
// stricter, exact rules of DESIGN.md; docs/VALIDATION.md is the rule catalogue).
// validate() never throws and never skips a check because a program is large.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

enum class Severity { Error, Warning };

/// One problem: a stable rule id (e.g. "race.raw"), a message naming the task (id and label),
/// buffer or counter (id and name), and the entities involved for tools that highlight them.
struct Diagnostic {
  Severity severity = Severity::Error;
  std::string rule;
  std::string message;
  std::vector<TaskId> tasks;
  std::vector<BufferId> buffers;
  std::vector<CounterId> counters;
};

/// Size and shape of the program, filled even when it is rejected (as far as it could be).
struct ValidationStats {
  int64_t tasks = 0;
  int64_t buffers = 0;
  int64_t counters = 0;
  int64_t edges = 0;           ///< producer -> waiter dependency edges
  int64_t sms_used = 0;        ///< distinct assigned workers
  int64_t unassigned_tasks = 0;
  int64_t critical_path = 0;   ///< longest chain of tasks through the happens-before graph
  int64_t weight_bytes = 0;
  int64_t scratch_bytes = 0;
  int64_t hb_queries = 0;      ///< happens-before questions the race checker asked
};

struct ValidationResult {
  bool ok = false;
  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> warnings;
  ValidationStats stats;
  /// Human report: verdict line, each error and warning, then stats.
  std::string report() const;
};

/// Check everything. ok == errors.empty().
ValidationResult validate(const Program& program) noexcept;

}  // namespace amk::ir
