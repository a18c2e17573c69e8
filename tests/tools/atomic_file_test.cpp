// tests/tools/atomic_file_test.cpp: the writer of amk-bench tune's --out (tools/bench/atomic_file.cpp):
// the whole text lands under the name with a plain file's mode, an earlier file is replaced only
// whole, and a write that cannot happen leaves the earlier file and no temporary behind.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "tools/bench/atomic_file.h"
#include "tools/tool_runner.h"

using namespace amk;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) { return test::read_text(p.string()); }

/// Entries of `dir`.
int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("atomic file: written whole, replaced whole, and a failure leaves the old file", "[tools]") {
  const fs::path dir = fs::path(AMK_BINARY_DIR) / "atomic_file_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "schedule.json";

  REQUIRE(bench::write_file_atomically(file.string(), "{\"a\": 1}\n").is_ok());
  CHECK(read_all(file) == "{\"a\": 1}\n");
  CHECK(entries(dir) == 1);  // no temporary left beside it
  // The mode a plain create gives (0666 less the umask), not mkstemp's 0600.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));

  const std::string big(1 << 20, 'x');  // more than one write() may take at once
  REQUIRE(bench::write_file_atomically(file.string(), big).is_ok());
  CHECK(read_all(file) == big);
  CHECK(entries(dir) == 1);

  // A folder that does not exist: IoError naming the path; nothing created anywhere.
  const fs::path nowhere = dir / "missing" / "schedule.json";
  Status s = bench::write_file_atomically(nowhere.string(), "x");
  CHECK(s.code() == StatusCode::IoError);
  CHECK_THAT(s.message(), Catch::Contains(nowhere.string()));
  CHECK(entries(dir) == 1);

  // A name that is a directory cannot be replaced: the rename fails, the temporary is removed and
  // the directory is untouched.
  const fs::path taken = dir / "taken";
  fs::create_directories(taken / "inside");
  s = bench::write_file_atomically(taken.string(), "x");
  CHECK(s.code() == StatusCode::IoError);
  CHECK_THAT(s.message(), Catch::Contains("cannot rename"));
  CHECK(fs::is_directory(taken / "inside"));
  CHECK(entries(dir) == 2);  // schedule.json and taken/
  CHECK(read_all(file) == big);

  std::string tmp;
  const int fd = bench::make_temporary_beside(file.string(), &tmp);
  REQUIRE(fd >= 0);
  CHECK(tmp.rfind(file.string() + ".tmp.", 0) == 0);
  ::close(fd);
  fs::remove(tmp);
  fs::remove_all(dir);
}
