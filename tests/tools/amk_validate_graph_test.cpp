// tests/tools/amk_validate_graph_test.cpp: `amk-validate --dot/--svg` on fixture files: the DOT
// is written (also for a rejected program, with red highlights), usage errors exit 2, and --svg
// without Graphviz on PATH exits 3 writing nothing.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tools/tool_runner.h"

using amk::test::read_text;
using amk::test::run_tool;
using amk::test::shell_quote;
using Catch::Contains;

namespace {
const std::string kBin = AMK_VALIDATE_BIN;
std::string fixture(const char* name) { return shell_quote(std::string(AMK_SOURCE_DIR "/tests/fixtures/tools/") + name); }
std::string out_path(const char* name) { return std::string(AMK_BINARY_DIR) + "/validate_graph_" + name; }
}  // namespace

TEST_CASE("amk-validate --dot draws accepted and rejected programs", "[tools]") {
  const std::string ok_dot = out_path("valid.dot"), bad_dot = out_path("rejected.dot");
  std::remove(ok_dot.c_str());
  std::remove(bad_dot.c_str());
  auto ok = run_tool(kBin, fixture("valid.json") + " --dot " + shell_quote(ok_dot));
  CHECK(ok.exit_code == 0);
  const std::string good = read_text(ok_dot);
  CHECK_THAT(good, Contains("digraph amk {") && Contains("ACCEPTED") && Contains("subgraph cluster_"));
  CHECK(good.find("color=red") == std::string::npos);

  auto bad = run_tool(kBin, fixture("rejected.json") + " --dot " + shell_quote(bad_dot));
  CHECK(bad.exit_code == 1);
  // The fixture is a race: the two tasks have no edge, so the missing order is drawn dashed.
  CHECK_THAT(read_text(bad_dot), Contains("REJECTED") && Contains("color=red") && Contains("diagnostics [") &&
                                     Contains("style=dashed"));
}

TEST_CASE("amk-validate --dot/--svg usage and missing Graphviz", "[tools]") {
  auto two = run_tool(kBin, fixture("valid.json") + " " + fixture("valid.json") + " --dot " + shell_quote(out_path("x.dot")));
  CHECK(two.exit_code == 2);
  CHECK_THAT(two.err, Contains("--dot"));

  const std::string svg = out_path("nodot.svg");
  std::remove(svg.c_str());
  // An empty PATH directory: no `dot` can be found.
  const std::string empty_dir = out_path("empty_path_dir");
  std::filesystem::create_directories(empty_dir);
  auto r = run_tool("/usr/bin/env", "PATH=" + shell_quote(empty_dir) + " " + shell_quote(kBin) + " " +
                                        fixture("valid.json") + " --svg " + shell_quote(svg));
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Contains("Graphviz") && Contains("--dot"));
  CHECK_FALSE(std::filesystem::exists(svg));
}

TEST_CASE("amk-validate --svg renders with Graphviz when it is installed", "[tools]") {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    WARN("Graphviz dot is not installed: --svg rendering not exercised (Catch2 v2 has no SKIP)");
    return;
  }
  const std::string svg = out_path("valid.svg");
  std::remove(svg.c_str());
  auto r = run_tool(kBin, fixture("valid.json") + " --svg " + shell_quote(svg));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(read_text(svg), Contains("<svg"));
}
