// ir/validate_sources.cpp: the static facts of stacked weight sources (docs/FOLD.md, "Stacked
// weight sources"), rule `source.stack`. A stacked buffer is a WEIGHT or CONST of shape [N, P, K]
// with P = the number of parts, and takes its tensors from `stack` alone. Whether each part exists
// and is [N, K] after its transpose needs the weights file: that is the loader's check.
#include <string>

#include "ir/validate_checks.h"

namespace amk::ir::detail {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "synthesized" sources are computed whole by the loader; they have no rows to interleave.
bool is_synth_key(const std::string& key) { return key.rfind("amk:", 0) == 0; }

void check_stacked(Context& cx, int32_t b) {
  const Program& p = cx.program;
  const Buffer& buf = p.buffers[b];
  const auto parts = static_cast<int64_t>(buf.stack.size());
  auto error = [&](const std::string& what) { cx.sink.error("source.stack", buffer_ref(p, b) + ": " + what, {}, {b}); };
  if (buf.kind != BufferKind::Weight && buf.kind != BufferKind::Const)
    error("only a WEIGHT or CONST buffer may be stacked, this one is " + std::string(buffer_kind_name(buf.kind)));
  if (buf.source)
    error("has both a source (\"" + *buf.source + "\") and a stack of " + std::to_string(parts) +
          " parts; a stacked buffer takes its tensors from the stack alone");
  if (buf.shape.size() != 3)
    error("is stacked from " + std::to_string(parts) + " parts, so it must be rank 3 [N, " + std::to_string(parts) +
          ", K], but its shape is " + shape_text(buf.shape));
  else if (buf.shape[1] != parts)
    error("shape " + shape_text(buf.shape) + " has " + std::to_string(buf.shape[1]) + " at axis 1, but the stack has " +
          std::to_string(parts) + " parts");
  for (size_t i = 0; i < buf.stack.size(); ++i) {
    const std::string& key = buf.stack[i].source;
    const std::string at = "stack[" + std::to_string(i) + "].source";
    if (key.empty()) error(at + " is empty");
    else if (is_synth_key(key)) error(at + " \"" + key + "\" is synthesized (amk:); only file tensors can be stacked");
  }
}

}  // namespace

void check_sources(Context& cx) {
  const Program& p = cx.program;
  for (int32_t b = 0; b < static_cast<int32_t>(p.buffers.size()); ++b)
    if (p.buffers[b].stacked()) check_stacked(cx, b);
}

}  // namespace amk::ir::detail
