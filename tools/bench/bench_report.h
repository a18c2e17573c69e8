// tools/bench/bench_report.h: the --json documents of amk-bench's GPU subcommands (decode,
// launch) in the style of docs/JSON.md: the common header, then "bench" and "backend".
#pragma once
#include <string>

#include "tools/common/json_out.h"

namespace amk::bench {

/// {"tool": "amk-bench", "version", "ok", "exit_code", "error", "bench": bench, "backend": "cuda"}.
tools::Json bench_document(const char* bench);

/// A successful run's document: bench_document(bench) marked succeeded, then "device", "model" (the
/// config's path) and "target", the fields every GPU subcommand that decodes a model opens with.
tools::Json bench_model_document(const char* bench, const std::string& device, const std::string& model,
                                 const std::string& target);

/// A failed run: "amk-bench <bench>: <message>" on stderr and, with `json`, the failure document
/// on stdout (error {code, message}). Returns `exit_code`.
int bench_fail(const char* bench, bool json, int exit_code, const std::string& code, const std::string& message);

/// The error code docs/JSON.md names for an amk-bench exit code (1 InvalidArgument, 3 GpuRuntime,
/// 4 Mismatch).
const char* bench_error_code(int exit_code);

}  // namespace amk::bench
