// targets/embedded.h: the GpuTarget records compiled into amk_targets (internal to targets/).
// The definition is generated at build time by embed_data.cmake from targets/data/*.json.
#pragma once
#include <string_view>
#include <vector>

namespace amk::targets {

/// One data file: its stem (the target name) and its JSON text.
struct EmbeddedTarget {
  std::string_view name;
  std::string_view json;
};

/// Every targets/data/*.json, sorted by file name.
const std::vector<EmbeddedTarget>& embedded_targets();

}  // namespace amk::targets
