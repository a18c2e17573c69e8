// vm/trace_export.h: LaunchTrace records -> a Chrome trace (JSON trace event format), the file
// `amk-run --trace` writes and ui.perfetto.dev / chrome://tracing load. docs/TRACING.md describes
// the layout: one process per run, one thread (track) per worker, per task a "wait" slice (time
// spent on counters) followed by a "run" slice (the micro-kernel), and a "launches" track.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/program.h"
#include "ir/status.h"
#include "vm/trace.h"

namespace amk::vm {

/// Names shown in the trace viewer.
struct TraceInfo {
  std::string program;   ///< program path or name (process name)
  std::string backend;   ///< "cpu", "cuda", "hip"
  int workers = 0;       ///< tracks to declare, even for a worker with an empty queue
};

/// The trace as a JSON document {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}.
/// Times are microseconds since the earliest launch begin. Records of tasks that never ran
/// (t_end == 0) are left out.
nlohmann::ordered_json trace_to_chrome_json(const ir::Program& program, const std::vector<LaunchTrace>& launches,
                                            const TraceInfo& info);

/// Write trace_to_chrome_json() to `path` atomically (never a half-written file).
[[nodiscard]] Status trace_save_chrome(const std::string& path, const ir::Program& program,
                                       const std::vector<LaunchTrace>& launches, const TraceInfo& info);

}  // namespace amk::vm
