// tools/validate_report.h: how amk-validate presents one file's outcome, as text and as JSON.
// Kept apart from main() so the --json schema lives in one place (README "amk-validate --json").
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/status.h"
#include "ir/validate.h"

namespace amk::tools {

/// What happened to one input file: it failed to load, or it was validated.
struct FileOutcome {
  std::string file;                ///< as named on the command line; "<stdin>" for "-"
  Status load_error;               ///< not ok: the file could not be loaded (result is unused)
  ir::ValidationResult result;     ///< validate()'s verdict when the file loaded
  double bandwidth_bound_us = -1;  ///< weight bytes / the program's target bandwidth; < 0 if no target
  bool ok() const { return load_error.is_ok() && result.ok; }
};

/// The human report: "<file>: ACCEPTED|REJECTED (...)", then errors, warnings and stats.
/// `quiet` prints only a rejected file's verdict and errors. At most `max_diags` errors and as many
/// warnings are listed (0 = all); the rest are counted.
std::string outcome_text(const FileOutcome& outcome, bool quiet, size_t max_diags);

/// One entry of the --json "files" array.
nlohmann::ordered_json outcome_json(const FileOutcome& outcome);

/// A "hint:" line for a load failure (empty when there is nothing useful to add).
std::string load_hint(const std::string& path, const Status& status);

}  // namespace amk::tools
