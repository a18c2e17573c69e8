// schedule/schedule_config.cpp: schedule-file parsing and target-bound knob checks.
#include "schedule/schedule_config.h"

#include <algorithm>
#include <variant>

#include "ir/json.h"
#include "ir/text_file.h"
#include "schedule/sm_assign.h"
#include "targets/registry.h"

namespace amk::schedule {
namespace {

using nlohmann::json;

constexpr int64_t kMaxThreadsPerBlock = 1024;  // CUDA and HIP block-size limit
constexpr double kMaxFastSmRatio = 4.0;        // measured: 1.09-1.3 (docs/SM_BALANCE.md); more is a typo

Status bad(const std::string& origin, const std::string& path, const std::string& what) {
  return Status(StatusCode::InvalidArgument, origin + ": " + path + ": " + what);
}

}  // namespace

Result<ir::ScheduleConfig> schedule_config_from_json(const json& j, const std::string& origin) {
  if (!j.is_object()) return bad(origin, "(root)", "expected a JSON object (a ScheduleConfig)");
  static const char* const kKnown[] = {"tiling",          "fusion_grouping",   "sm_assignment",
                                       "fast_sms",        "fast_sm_ratio",     "pipelining_depth",
                                       "page_allocation", "threads_per_block", "smem_bytes_per_block"};
  for (const auto& item : j.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || item.key() == k;
    if (!known) {
      std::string list;
      for (const char* k : kKnown) list += std::string(list.empty() ? "" : ", ") + k;
      return bad(origin, item.key(), "unknown schedule knob (known: " + list + ")");
    }
  }
  // The types are the program "config" rules, so a schedule file and a program's config agree.
  auto c = ir::schedule_config_from_json(j, "");
  if (!c) return Status(c.status().code(), origin + ": " + c.status().message());
  return c;
}

Result<ir::ScheduleConfig> schedule_config_from_json_text(std::string_view text, const std::string& origin) {
  try {
    return schedule_config_from_json(json::parse(text.begin(), text.end()), origin);
  } catch (const json::exception& e) {
    return Status(StatusCode::ParseError, origin + ": not valid JSON: " + e.what());
  }
}

Result<ir::ScheduleConfig> schedule_config_load(const std::string& path) {
  Result<std::string> text = ir::read_text_file(path, "schedule file");
  if (!text) return text.status();
  return schedule_config_from_json_text(*text, path);
}

int target_warp_size(const ir::GpuTarget& target) { return targets::target_is_amd(target) ? 64 : 32; }

Status schedule_config_check(const ir::ScheduleConfig& c, const ir::GpuTarget& target) {
  auto invalid = [](const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); };
  if (c.pipelining_depth < 0) {
    return invalid("pipelining_depth: " + std::to_string(c.pipelining_depth) + " must be >= 0 (0 = no prefetch)");
  }
  const int warp = target_warp_size(target);
  if (c.threads_per_block < warp || c.threads_per_block > kMaxThreadsPerBlock || c.threads_per_block % warp != 0) {
    return invalid("threads_per_block: " + std::to_string(c.threads_per_block) + " must be a multiple of " +
                   std::to_string(warp) + " (the warp width on target '" + target.name + "') in [" +
                   std::to_string(warp) + ", " + std::to_string(kMaxThreadsPerBlock) + "]");
  }
  if (c.smem_bytes_per_block < 0 || c.smem_bytes_per_block > target.smem_bytes_per_block_optin) {
    return invalid("smem_bytes_per_block: " + std::to_string(c.smem_bytes_per_block) + " must be in [0, " +
                   std::to_string(target.smem_bytes_per_block_optin) + "] (target '" + target.name +
                   "' smem_bytes_per_block_optin)");
  }
  if (c.page_allocation != "none" && c.page_allocation != "linear" && c.page_allocation != "graph_color") {
    return invalid("page_allocation: \"" + c.page_allocation + "\" is not one of \"none\", \"linear\", \"graph_color\"");
  }
  if (const auto* name = std::get_if<std::string>(&c.sm_assignment)) {
    if (!is_sm_policy(*name)) return unknown_sm_policy(*name);
  }
  if (c.fast_sms < 0 || c.fast_sms > std::max<int64_t>(target.num_sms, 0)) {
    return invalid("fast_sms: " + std::to_string(c.fast_sms) + " must be in [0, " + std::to_string(target.num_sms) +
                   "] (target '" + target.name + "' num_sms)");
  }
  if (!(c.fast_sm_ratio >= 1.0 && c.fast_sm_ratio <= kMaxFastSmRatio)) {
    return invalid("fast_sm_ratio: " + std::to_string(c.fast_sm_ratio) + " must be in [1, " +
                   std::to_string(kMaxFastSmRatio) + "] (how many times as fast SMs [0, fast_sms) stream)");
  }
  const bool balances = std::holds_alternative<std::string>(c.sm_assignment) &&
                        std::get<std::string>(c.sm_assignment) == "stage_balance";
  if (c.fast_sms > 0 && !balances) {
    return invalid("fast_sms: " + std::to_string(c.fast_sms) +
                   " needs sm_assignment \"stage_balance\" (the only policy that weighs SMs by speed)");
  }
  return Status::ok();
}

}  // namespace amk::schedule
