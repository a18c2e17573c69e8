// ir/validate_sources.cpp: the static facts of weight sources that the loader transforms.
// Rule `source.stack` (docs/FOLD.md, "Stacked weight sources"): a stacked buffer is a WEIGHT or
// CONST of shape [N, P, K] with P = the number of parts, and takes its tensors from `stack` alone.
// Rule `source.rope_pairs` (docs/JSON.md, "rope_pairs"): a row-permuted buffer is a WEIGHT or CONST
// [N, K] with one file `source` and N whole heads of an even head_dim. Whether the tensors exist
// and have the buffer's shape needs the weights file: that is the loader's check.
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

void check_rope_pairs(Context& cx, int32_t b) {
  const Program& p = cx.program;
  const Buffer& buf = p.buffers[b];
  const std::string hd = "rope_pairs " + std::to_string(buf.rope_pairs);
  auto error = [&](const std::string& what) {
    cx.sink.error("source.rope_pairs", buffer_ref(p, b) + ": " + what, {}, {b});
  };
  if (buf.kind != BufferKind::Weight && buf.kind != BufferKind::Const)
    error(hd + ": only a WEIGHT or CONST buffer may be permuted, this one is " +
          std::string(buffer_kind_name(buf.kind)));
  // The permutation acts on one file tensor's rows; a stack interleaves several, a synthesized
  // constant has no file rows (and no caller needs either permuted).
  if (buf.stacked())
    error(hd + ": a stacked buffer (" + std::to_string(buf.stack.size()) +
          " parts) cannot be permuted; only a buffer with one source can");
  else if (!buf.source || buf.source->empty())
    error(hd + ": the buffer has no source; the permutation reorders the rows of its source tensor");
  else if (is_synth_key(*buf.source))
    error(hd + ": source \"" + *buf.source + "\" is synthesized (amk:); only file tensors can be permuted");
  const bool hd_ok = buf.rope_pairs >= 2 && buf.rope_pairs % 2 == 0;
  if (!hd_ok) error(hd + " is not a head_dim: it must be even and at least 2");
  if (buf.shape.size() != 2)
    error(hd + " permutes rows, so the buffer must be rank 2 [N, K], but its shape is " + shape_text(buf.shape));
  else if (hd_ok && buf.shape[0] % buf.rope_pairs != 0)
    error("shape " + shape_text(buf.shape) + " has " + std::to_string(buf.shape[0]) +
          " rows, which is not a whole number of heads of " + hd);
}

}  // namespace

void check_sources(Context& cx) {
  const Program& p = cx.program;
  for (int32_t b = 0; b < static_cast<int32_t>(p.buffers.size()); ++b) {
    if (p.buffers[b].stacked()) check_stacked(cx, b);
    if (p.buffers[b].rope_permuted()) check_rope_pairs(cx, b);
  }
}

}  // namespace amk::ir::detail
