// schedule/schedule_config.h: reading a ScheduleConfig (IR spec section 5) from a schedule file,
// and checking the knobs that are limits of the target rather than of the model.
// The file holds one JSON object with the keys of a program's "config"; docs/SCHEDULE.md lists
// what every knob does. Unlike a program's config, a schedule file is written by hand or by a
// search, so an unknown key is an error (a typo must not silently fall back to a default).
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::schedule {

/// A ScheduleConfig from a JSON object; errors start with "<origin>: <json path>:".
[[nodiscard]] Result<ir::ScheduleConfig> schedule_config_from_json(const nlohmann::json& j, const std::string& origin);
/// Parse schedule-file text.
[[nodiscard]] Result<ir::ScheduleConfig> schedule_config_from_json_text(std::string_view text,
                                                                       const std::string& origin);
/// Read and parse a schedule file.
[[nodiscard]] Result<ir::ScheduleConfig> schedule_config_load(const std::string& path);

/// The knobs bounded by the target or by the runtime: pipelining_depth >= 0; threads_per_block in
/// [warp, 1024] and a multiple of the warp (64 on AMD targets, else 32); 0 <= smem_bytes_per_block
/// <= target.smem_bytes_per_block_optin; page_allocation and a named sm_assignment are known
/// strings. InvalidArgument names the knob and the limit. (Tiling and fusion are checked by lower().)
[[nodiscard]] Status schedule_config_check(const ir::ScheduleConfig& config, const ir::GpuTarget& target);

/// Warp (wavefront) width the persistent kernel will run with on `target`.
int target_warp_size(const ir::GpuTarget& target);

}  // namespace amk::schedule
