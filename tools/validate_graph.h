// tools/validate_graph.h: `amk-validate --dot/--svg`: write a program's DAG (ir/dot.h) as a DOT
// file, or render it to SVG with Graphviz's `dot` when it is on PATH. Both outputs appear
// atomically (temporary file, then rename): a failure never leaves a half-written file.
#pragma once
#include <string>

#include "ir/status.h"

namespace amk::tools {

/// The full path of Graphviz's `dot` on PATH, or "" when there is none.
std::string graphviz_dot_path();

/// Write `dot_text` to `path`.
[[nodiscard]] Status dot_save(const std::string& path, const std::string& dot_text);

/// Render `dot_text` with `dot_binary -Tsvg` into `path`. Unsupported when `dot_binary` is empty,
/// IoError when it fails (its stderr passes through).
[[nodiscard]] Status svg_save(const std::string& path, const std::string& dot_text, const std::string& dot_binary);

}  // namespace amk::tools
