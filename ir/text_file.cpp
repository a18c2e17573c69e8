// ir/text_file.cpp: see text_file.h.
#include "ir/text_file.h"

#include <fstream>
#include <sstream>

namespace amk::ir {

Result<std::string> read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::IoError, path + ": cannot open the " + what);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(StatusCode::IoError, path + ": read failed");
  return text.str();
}

}  // namespace amk::ir
