// tests/ir/text_save_atomic_test.cpp: the writer of the tools' outputs (ir::text_save_atomic:
// traces, DOT graphs, amk-bench tune's --out): the whole text lands under the name, a new file 0644
// and a replaced one with its own mode (not mkstemp's 0600), an earlier file is replaced only
// whole, and a write that cannot happen leaves the earlier file and no temporary behind.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "ir/json.h"
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

TEST_CASE("text_save_atomic: written whole, replaced whole, and a failure leaves the old file", "[ir]") {
  const fs::path dir = fs::path(AMK_BINARY_DIR) / "text_save_atomic_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "schedule.json";

  REQUIRE(ir::text_save_atomic(file.string(), "{\"a\": 1}\n").is_ok());
  CHECK(read_all(file) == "{\"a\": 1}\n");
  CHECK(entries(dir) == 1);  // no temporary left beside it
  // A new file is 0644, not mkstemp's 0600.
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);

  // A replaced file keeps its mode.
  REQUIRE(::chmod(file.c_str(), 0640) == 0);
  const std::string big(1 << 20, 'x');  // more than one write() may take at once
  REQUIRE(ir::text_save_atomic(file.string(), big).is_ok());
  CHECK(read_all(file) == big);
  CHECK(entries(dir) == 1);
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);

  // A folder that does not exist: IoError naming the path; nothing created anywhere.
  const fs::path nowhere = dir / "missing" / "schedule.json";
  Status s = ir::text_save_atomic(nowhere.string(), "x");
  CHECK(s.code() == StatusCode::IoError);
  CHECK_THAT(s.message(), Catch::Contains(nowhere.string()));
  CHECK(entries(dir) == 1);

  // A name that is a directory cannot be replaced: the rename fails, the temporary is removed and
  // the directory is untouched.
  const fs::path taken = dir / "taken";
  fs::create_directories(taken / "inside");
  s = ir::text_save_atomic(taken.string(), "x");
  CHECK(s.code() == StatusCode::IoError);
  CHECK_THAT(s.message(), Catch::Contains("cannot rename"));
  CHECK(fs::is_directory(taken / "inside"));
  CHECK(entries(dir) == 2);  // schedule.json and taken/
  CHECK(read_all(file) == big);

  std::string tmp;
  const int fd = ir::temp_file_beside(file.string(), &tmp);
  REQUIRE(fd >= 0);
  CHECK(tmp.rfind(file.string() + ".tmp.", 0) == 0);
  ::close(fd);
  fs::remove(tmp);
  fs::remove_all(dir);
}
