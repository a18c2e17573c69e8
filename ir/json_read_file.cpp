// ir/json_read_file.cpp: program_load: parse a file (or standard input for "-").
// Regular files are memory-mapped: a large program is then parsed straight from the page cache with
// no copy. I/O errors name the file; parse errors keep the JSON path first (tools prefix the file).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/json.h"

namespace amk::ir {
namespace {

// Appends everything readable from `fd` to `out`; false on a read error (errno set).
bool read_all(int fd, std::string& out) {
  std::vector<char> chunk(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out.append(chunk.data(), static_cast<size_t>(n));
  }
}

Status io_error(const std::string& path, const char* what, int err) {
  return Status(StatusCode::IoError, path + ": cannot " + what + ": " + std::strerror(err));
}

}  // namespace

Result<Program> program_load(const std::string& path) {
  try {
    std::string text;
    if (path == "-") {
      if (!read_all(STDIN_FILENO, text)) return io_error("-", "read standard input", errno);
      return program_from_json_text(text);
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(path, "open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return io_error(path, "stat", err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Status(StatusCode::IoError, path + ": cannot read: is a directory");
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      const auto size = static_cast<size_t>(st.st_size);
      void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        ::close(fd);
        ::madvise(map, size, MADV_SEQUENTIAL);
        Result<Program> r = program_from_json_text(std::string_view(static_cast<const char*>(map), size));
        ::munmap(map, size);
        return r;
      }
    }
    // Pipes, devices, empty files and unmappable files are read.
    const bool ok = read_all(fd, text);
    const int err = errno;
    ::close(fd);
    if (!ok) return io_error(path, "read", err);
    return program_from_json_text(text);
  } catch (const std::exception& e) {
    return Status(StatusCode::IoError, path + ": cannot read: " + e.what());
  }
}

}  // namespace amk::ir
