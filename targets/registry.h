// targets/registry.h: the GPU targets amk knows by name (targets/data/*.json, embedded at build
// time) and loading a target from a user's JSON file.
// sm_arch convention: NVIDIA records hold the compute capability x 10 (90 = sm_90, 120 = sm_120);
// AMD records hold the gfx target name's digits read as one hexadecimal number (gfx90a -> 0x90a =
// 2314, gfx942 -> 0x942 = 2370); the CPU record holds 0, and its num_sms = 0 means "one worker
// per CPU this process may use" (vm/cpu_count.h), decided at run time.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::targets {

/// The built-in target named `name` (case-insensitive, e.g. "h100"); NotFound lists the known names.
[[nodiscard]] Result<ir::GpuTarget> target_find(std::string_view name);
/// The built-in target names, sorted.
std::vector<std::string> target_names();
/// A target from a JSON file holding one GpuTarget object; errors name the file.
[[nodiscard]] Result<ir::GpuTarget> target_load_file(const std::string& path);
/// A built-in name, or else a path to a JSON file (anything containing '/' or ending in ".json").
[[nodiscard]] Result<ir::GpuTarget> target_resolve(std::string_view name_or_path);

/// The architecture as a compiler names it: "sm_90", "gfx90a", or "cpu" for sm_arch 0.
std::string target_arch_name(const ir::GpuTarget& target);
/// True for AMD records (sm_arch in the gfx range, see the convention above).
bool target_is_amd(const ir::GpuTarget& target);

}  // namespace amk::targets
