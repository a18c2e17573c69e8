// loader/names.h: how loader messages name entities, matching validate()'s diagnostics:
// `task 17 (rms_norm)`, `buffer 4 "h_norm"`, `counter 3`, `page 2` (internal to amk_loader), and
// a buffer's source or stack part.
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
/// Where a WEIGHT/CONST buffer's data comes from: `source "k"`, `stack ["a", "b", "c" (transposed)]`
/// or `no source`.
inline std::string source_text(const ir::Buffer& b) {
  if (b.source) return "source \"" + *b.source + "\"";
  if (!b.stacked()) return "no source";
  std::string s = "stack [";
  for (size_t i = 0; i < b.stack.size(); ++i)
    s += (i ? ", \"" : "\"") + b.stack[i].source + "\"" + (b.stack[i].transpose ? " (transposed)" : "");
  return s + "]";
}
/// `buffer 5 "w_mlp" stack[2] (source "down.weight", transposed)` for part `i` of a stacked buffer.
inline std::string stack_part_name(const ir::Buffer& b, size_t i) {
  const ir::StackPart& part = b.stack[i];
  return buffer_name(b) + " stack[" + std::to_string(i) + "] (source \"" + part.source + "\"" +
         (part.transpose ? ", transposed)" : ")");
}
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace amk::loader
