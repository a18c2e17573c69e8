// loader/names.h: how loader messages name entities, matching validate()'s diagnostics:
// `task 17 (rms_norm)`, `buffer 4 "h_norm"`, `counter 3`, `page 2` (internal to amk_loader).
#pragma once
#include <string>

#include "ir/program.h"

namespace amk::loader {

inline std::string task_name(const ir::Task& t) {
  return "task " + std::to_string(t.id.value) + " (" + t.label + ")";
}
inline std::string buffer_name(const ir::Buffer& b) {
  return "buffer " + std::to_string(b.id.value) + " \"" + b.name + "\"";
}
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace amk::loader
