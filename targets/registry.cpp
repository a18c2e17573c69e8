// targets/registry.cpp: look-ups over the embedded target records and user target files.
// Records are parsed on each look-up (a few hundred bytes each), so there is no shared state.
#include "targets/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/text_file.h"
#include "targets/embedded.h"

namespace amk::targets {
namespace {

// gfx ids start at gfx600 (0x600); NVIDIA compute capabilities x 10 stay far below.
constexpr int64_t kAmdArchMin = 0x600;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string joined_names() {
  std::string out;
  for (const auto& n : target_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Parse JSON text; a syntax error becomes a ParseError that names `origin`.
Result<nlohmann::json> parse_json(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return Status(StatusCode::ParseError, origin + ": not valid JSON: " + e.what());
  }
}

}  // namespace

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& rec : embedded_targets()) names.emplace_back(rec.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<ir::GpuTarget> target_find(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& rec : embedded_targets()) {
    if (rec.name != key) continue;
    const std::string origin = "targets/data/" + std::string(rec.name) + ".json";
    auto j = parse_json(rec.json, origin);
    if (!j) return j.status();
    return ir::gpu_target_from_json(*j, origin);
  }
  return Status(StatusCode::NotFound,
                "unknown GPU target '" + std::string(name) + "'; known targets: " + joined_names());
}

Result<ir::GpuTarget> target_load_file(const std::string& path) {
  Result<std::string> text = ir::read_text_file(path, "target file");
  if (!text) return text.status();
  auto j = parse_json(*text, path);
  if (!j) return j.status();
  if (!j->is_object()) return Status(StatusCode::ParseError, path + ": expected a JSON object (one GpuTarget)");
  return ir::gpu_target_from_json(*j, path);
}

Result<ir::GpuTarget> target_resolve(std::string_view name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string_view::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (is_path) return target_load_file(std::string(name_or_path));
  return target_find(name_or_path);
}

bool target_is_amd(const ir::GpuTarget& target) { return target.sm_arch >= kAmdArchMin; }

std::string target_arch_name(const ir::GpuTarget& target) {
  if (target.sm_arch <= 0) return "cpu";
  char buf[32];
  if (target_is_amd(target)) {
    std::snprintf(buf, sizeof buf, "gfx%llx", static_cast<unsigned long long>(target.sm_arch));
  } else {
    std::snprintf(buf, sizeof buf, "sm_%lld", static_cast<long long>(target.sm_arch));
  }
  return buf;
}

}  // namespace amk::targets
