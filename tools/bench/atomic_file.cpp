// tools/bench/atomic_file.cpp: see atomic_file.h. POSIX: mkstemp, fsync, rename.
#include "tools/bench/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace amk::bench {

// A unique name, not a fixed "<path>.tmp": two runs with one --out must not write into each other,
// nor overwrite whatever a user keeps under that name.
int make_temporary_beside(const std::string& path, std::string* tmp) {
  std::vector<char> name(path.begin(), path.end());
  for (char c : std::string(".tmp.XXXXXX")) name.push_back(c);
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd >= 0) *tmp = name.data();
  return fd;
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp;
  const int fd = make_temporary_beside(path, &tmp);
  if (fd < 0) return Status(StatusCode::IoError, path + ": cannot create a temporary file beside it: " + std::strerror(errno));
  const auto give_up = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, tmp + ": " + what + " failed: " + why);
  };
  // mkstemp makes the file 0600; the result is an ordinary file, so give it what open() would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return give_up("fchmod");
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up("write");
    done += static_cast<size_t>(n);
  }
  // On disk before the rename, so a crash leaves the old file or the whole new one, never an empty one.
  if (::fsync(fd) != 0) return give_up("fsync");
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, tmp + ": close failed: " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot rename " + tmp + " over it: " + why);
  }
  return Status::ok();
}

}  // namespace amk::bench
