// ir/text_file.h: a small text file (a model config, schedule, target, tune space) read whole, with
// the one pair of I/O errors every such reader gives: "<path>: cannot open the <what>" and
// "<path>: read failed" (IoError). Programs, which can be large, go through program_load instead.
#pragma once
#include <string>

#include "ir/status.h"

namespace amk::ir {

/// The file's bytes; `what` names the kind of file in the open error ("schedule file").
[[nodiscard]] Result<std::string> read_text_file(const std::string& path, const std::string& what);

}  // namespace amk::ir
