// ir/json.h: reading and writing programs as JSON (IR spec section 6).
// Nothing here throws: parse and type errors come back as a Status whose message starts with the
// JSON path of the offending value, e.g. "tasks[17].waits[2].threshold: expected a positive
// integer, got 1.5".
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::ir {

/// Parse a program from JSON text. Enum names are strings; unknown names, wrong types, non-finite
/// or out-of-range numbers and a major version mismatch are errors. Unknown top-level keys are
/// ignored and unknown `target`/`config` keys dropped.
Result<Program> program_from_json_text(std::string_view text);
/// Read and parse a file; "-" reads standard input.
Result<Program> program_load(const std::string& path);
/// Serialize (indent 2, spec key order). program_from_json_text(program_to_json(p)) re-serializes
/// to the same bytes.
std::string program_to_json(const Program& program);
/// Write atomically (a temporary file renamed into place), so a failed write leaves nothing half-written.
Status program_save(const Program& program, const std::string& path);
/// Write `text` to `path` the same way (temporary file in the same directory, then rename), for
/// tools' other outputs (traces, DOT graphs) that must never be left half-written.
Status text_save_atomic(const std::string& path, std::string_view text);
/// The temporary those writers use: a new, empty, uniquely named file "<path>.tmp.XXXXXX" beside
/// `path` (mode 0600), open for writing; its descriptor, or -1 with errno set. Also a cheap check
/// that `path`'s folder takes files, before work whose result is to be saved there.
int temp_file_beside(const std::string& path, std::string* tmp);

/// A GpuTarget from a JSON object; `path` prefixes error messages. Unknown keys are dropped.
Result<GpuTarget> gpu_target_from_json(const nlohmann::json& j, const std::string& path);
/// A GpuTarget as a JSON object in spec field order.
nlohmann::ordered_json gpu_target_to_json(const GpuTarget& t);

/// A ScheduleConfig from a JSON object (spec 5); `path` prefixes error messages. Unknown keys are
/// dropped, missing ones take their defaults; sm_assignment's object keys are int-parsed.
Result<ScheduleConfig> schedule_config_from_json(const nlohmann::json& j, const std::string& path);
/// A ScheduleConfig as a JSON object in spec field order (sm_assignment keys as strings).
nlohmann::ordered_json schedule_config_to_json(const ScheduleConfig& c);

}  // namespace amk::ir
