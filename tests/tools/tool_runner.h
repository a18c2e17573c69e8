// tests/tools/tool_runner.h: run a built tool through the shell and capture exit code, stdout and
// stderr (each to its own file under the build tree), for the tests that exercise real binaries.
#pragma once
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace amk::test {

struct ToolRun {
  int exit_code = -1;  ///< -1 when the process did not exit normally
  std::string out;
  std::string err;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Single-quote a path for sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Run `binary` with `args` (already shell-quoted as needed); `stdin_path` is redirected in if set.
inline ToolRun run_tool(const std::string& binary, const std::string& args, const std::string& stdin_path = "") {
  static std::atomic<int> seq{0};
  const std::string stem = std::string(AMK_BINARY_DIR) + "/tool_run_" + std::to_string(::getpid()) + "_" +
                           std::to_string(seq++);
  const std::string out = stem + ".out", err = stem + ".err";
  std::string cmd = shell_quote(binary) + " " + args;
  cmd += stdin_path.empty() ? " < /dev/null" : " < " + shell_quote(stdin_path);
  cmd += " > " + shell_quote(out) + " 2> " + shell_quote(err);
  const int status = std::system(cmd.c_str());
  ToolRun r;
  if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = read_text(out);
  r.err = read_text(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace amk::test
