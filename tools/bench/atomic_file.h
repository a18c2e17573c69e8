// tools/bench/atomic_file.h: a result file written so that no reader and no crash ever sees half
// of it, and no failure touches what was there before (amk-bench tune's --out).
#pragma once
#include <string>

#include "ir/status.h"

namespace amk::bench {

/// A new, empty, uniquely named file beside `path` ("<path>.tmp.XXXXXX", mode 0600), open for
/// writing: its descriptor, or -1 with errno set when the folder does not take one.
int make_temporary_beside(const std::string& path, std::string* tmp);

/// Write `text` to `path` through a uniquely named temporary file beside it, flushed to disk and
/// renamed over `path` (with the mode a plain create would give). A failure removes the temporary
/// and leaves `path` as it was; the error (IoError) names the file and the call that failed.
[[nodiscard]] Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace amk::bench
