// tools/validate_graph.cpp: DOT and SVG output of amk-validate (tools/validate_graph.h).
// `dot` runs through posix_spawn with an argument vector, never a shell, so paths need no quoting.
#include "tools/validate_graph.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/json.h"

extern char** environ;

namespace amk::tools {
namespace {

/// A unique empty file next to `path` (same directory, so the final rename cannot cross devices).
std::string temp_beside(const std::string& path, const char* what, Status* error) {
  std::string tmp = path + "." + what + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    *error = Status(StatusCode::IoError, path + ": cannot create a temporary file: " + std::strerror(errno));
    return "";
  }
  ::close(fd);
  return tmp;
}

}  // namespace

std::string graphviz_dot_path() {
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "";
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    const std::string candidate = dir + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

Status dot_save(const std::string& path, const std::string& dot_text) { return ir::text_save_atomic(path, dot_text); }

Status svg_save(const std::string& path, const std::string& dot_text, const std::string& dot_binary) {
  if (dot_binary.empty())
    return Status(StatusCode::Unsupported, "--svg needs Graphviz's 'dot' on PATH (apt-get install graphviz); "
                                           "--dot writes the graph without it");
  Status error;
  const std::string dot_tmp = temp_beside(path, "dot.tmp", &error);
  if (dot_tmp.empty()) return error;
  if (Status s = ir::text_save_atomic(dot_tmp, dot_text); !s) {
    std::remove(dot_tmp.c_str());
    return s;
  }
  const std::string svg_tmp = temp_beside(path, "tmp", &error);
  if (svg_tmp.empty()) {
    std::remove(dot_tmp.c_str());
    return error;
  }
  std::vector<std::string> args = {dot_binary, "-Tsvg", "-o", svg_tmp, dot_tmp};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int status = 0;
  const int spawn_err = ::posix_spawn(&pid, dot_binary.c_str(), nullptr, nullptr, argv.data(), environ);
  const bool ran = spawn_err == 0 && ::waitpid(pid, &status, 0) == pid;
  std::remove(dot_tmp.c_str());
  if (!ran || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(svg_tmp.c_str());
    const std::string why = spawn_err != 0 ? std::string("cannot start it: ") + std::strerror(spawn_err)
                                           : "it failed (exit status " +
                                                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
    return Status(StatusCode::IoError, path + ": rendering with " + dot_binary + ": " + why);
  }
  ::chmod(svg_tmp.c_str(), 0644);  // mkstemp made it 0600; an SVG is not a secret
  if (::rename(svg_tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(svg_tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot rename the temporary file into place: " + std::strerror(err));
  }
  return Status::ok();
}

}  // namespace amk::tools
