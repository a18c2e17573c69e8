// tools/common/json_out.h: the one --json style every amk tool follows (docs/JSON.md). A document
// opens with {"tool", "version", "ok", "exit_code", "error"} in that order, then the tool's own
// fields; the same thing has the same name in every tool ("program", "backend", "latency_us",
// "tokens"). Kept apart from the mains so amk-bench's GPU subcommands can build the same shape.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/status.h"

namespace amk::tools {

using Json = nlohmann::ordered_json;

/// The amk version the tools were built from ("0.2.0").
const char* amk_version();

/// {"tool": tool, "version", "ok": false, "exit_code": 0, "error": null}: fill the rest, then call
/// json_succeed() or json_fail().
Json json_document(const std::string& tool);

/// Mark the document successful: ok true, exit_code 0, error null.
void json_succeed(Json& doc);

/// Mark it failed: ok false, the tool's exit code and error {"code", "message"}.
void json_fail(Json& doc, const std::string& code, const std::string& message, int exit_code);
/// Same, with the code taken from a Status ("InvalidArgument", "Timeout", ...).
void json_fail(Json& doc, const Status& status, int exit_code);

/// {"median", "p90", "min", "max", "mean", "count"} of latency samples in microseconds (all 0 when
/// empty). Every tool reports latencies under "latency_us" with these keys.
Json json_latency_us(const std::vector<double>& samples_us);

/// The p-th quantile (0..1, nearest rank) of `v`; 0 when empty.
double percentile(std::vector<double> v, double p);
/// percentile(v, 0.5): the middle sample, the upper of the two middle ones for an even count.
inline double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

/// Serialized for stdout: indent 2, invalid UTF-8 in user-supplied strings replaced, trailing newline.
std::string json_text(const Json& doc);

}  // namespace amk::tools
