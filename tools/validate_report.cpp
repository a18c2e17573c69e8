// tools/validate_report.cpp: text and JSON renderings of amk-validate's per-file outcome.
#include "tools/validate_report.h"

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <vector>

namespace amk::tools {
namespace {

// "  error [race.raw] msg", with continuation lines of a multi-line message indented.
void append_diag(std::ostringstream& os, const char* severity, const ir::Diagnostic& d) {
  os << "  " << severity << " [" << d.rule << "] ";
  for (char c : d.message) {
    os << c;
    if (c == '\n') os << "      ";
  }
  os << '\n';
}

void append_diags(std::ostringstream& os, const char* severity, const std::vector<ir::Diagnostic>& diags,
                  size_t max_diags) {
  const size_t shown = (max_diags == 0 || diags.size() <= max_diags) ? diags.size() : max_diags;
  for (size_t i = 0; i < shown; ++i) append_diag(os, severity, diags[i]);
  if (shown < diags.size())
    os << "  ... and " << (diags.size() - shown) << " more " << severity << "s (use --max-errors 0 or --json)\n";
}

std::string mib(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

template <typename IdT>
nlohmann::ordered_json id_array(const std::vector<IdT>& ids) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (IdT id : ids) a.push_back(id.value);
  return a;
}

nlohmann::ordered_json diag_json(const ir::Diagnostic& d) {
  nlohmann::ordered_json j;
  j["rule"] = d.rule;
  j["message"] = d.message;
  j["tasks"] = id_array(d.tasks);
  j["buffers"] = id_array(d.buffers);
  j["counters"] = id_array(d.counters);
  return j;
}

nlohmann::ordered_json diags_json(const std::vector<ir::Diagnostic>& diags) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& d : diags) a.push_back(diag_json(d));
  return a;
}

}  // namespace

std::string outcome_text(const FileOutcome& o, bool quiet, size_t max_diags) {
  std::ostringstream os;
  if (!o.load_error.is_ok()) return "";  // main() reports load failures on stderr
  const ir::ValidationResult& r = o.result;
  if (quiet && r.ok) return "";
  os << o.file << ": " << (r.ok ? "ACCEPTED" : "REJECTED") << " (" << r.stats.tasks << " tasks, "
     << r.errors.size() << " errors, " << r.warnings.size() << " warnings)\n";
  append_diags(os, "error", r.errors, max_diags);
  if (quiet) return os.str();
  append_diags(os, "warning", r.warnings, max_diags);
  const ir::ValidationStats& s = r.stats;
  os << "  stats: tasks=" << s.tasks << " buffers=" << s.buffers << " counters=" << s.counters
     << " edges=" << s.edges << " sms_used=" << s.sms_used << " unassigned_tasks=" << s.unassigned_tasks
     << " critical_path=" << s.critical_path << " hb_queries=" << s.hb_queries << '\n';
  os << "  memory: weights " << mib(s.weight_bytes) << ", scratch " << mib(s.scratch_bytes);
  if (o.bandwidth_bound_us >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g us", o.bandwidth_bound_us);
    os << "; bandwidth floor " << buf << " per step on the program's target";
  }
  os << '\n';
  return os.str();
}

nlohmann::ordered_json outcome_json(const FileOutcome& o) {
  nlohmann::ordered_json j;
  j["file"] = o.file;
  j["ok"] = o.ok();
  if (!o.load_error.is_ok()) {
    j["load_error"] = o.load_error.message();
    j["errors"] = nlohmann::ordered_json::array();
    j["warnings"] = nlohmann::ordered_json::array();
    j["stats"] = nullptr;
    return j;
  }
  j["load_error"] = nullptr;
  j["errors"] = diags_json(o.result.errors);
  j["warnings"] = diags_json(o.result.warnings);
  const ir::ValidationStats& s = o.result.stats;
  nlohmann::ordered_json st;
  st["tasks"] = s.tasks;
  st["buffers"] = s.buffers;
  st["counters"] = s.counters;
  st["edges"] = s.edges;
  st["sms_used"] = s.sms_used;
  st["unassigned_tasks"] = s.unassigned_tasks;
  st["critical_path"] = s.critical_path;
  st["weight_bytes"] = s.weight_bytes;
  st["scratch_bytes"] = s.scratch_bytes;
  st["hb_queries"] = s.hb_queries;
  st["bandwidth_bound_us"] = o.bandwidth_bound_us >= 0 ? nlohmann::ordered_json(o.bandwidth_bound_us) : nullptr;
  j["stats"] = std::move(st);
  return j;
}

std::string load_hint(const std::string& path, const Status& status) {
  namespace fs = std::filesystem;
  switch (status.code()) {
    case StatusCode::IoError:
    case StatusCode::NotFound: {
      std::error_code ec;
      if (path != "-" && !fs::exists(path, ec)) return "no such file; check the path, or pass '-' to read standard input";
      if (path != "-" && fs::is_directory(path, ec)) return "this is a directory; pass program files (e.g. examples/*.json)";
      return "check that the file is readable";
    }
    case StatusCode::ParseError:
      return "expected an AMK IR program as JSON (IR spec section 6); the message gives the position of the error";
    case StatusCode::InvalidArgument:
      return "the message starts with the JSON path of the offending value";
    case StatusCode::Unsupported:
      return "this amk reads IR " + std::string(ir::kIrVersion) + " (only the major version must match)";
    default:
      return "";
  }
}

}  // namespace amk::tools
