// tests/tools/amk_validate_test.cpp: the built amk-validate binary on fixture files: exit codes
// (0 accepted, 1 rejected or not loadable, 2 usage), text report, stdin, --quiet and the --json
// schema documented in README.md and --help.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "tools/tool_runner.h"

using amk::test::run_tool;
using amk::test::shell_quote;
using Catch::Contains;

namespace {
const std::string kBin = AMK_VALIDATE_BIN;
const std::string kFixtures = AMK_SOURCE_DIR "/tests/fixtures/tools/";
std::string fixture(const char* name) { return kFixtures + name; }
std::string arg(const char* name) { return shell_quote(fixture(name)); }
}  // namespace

TEST_CASE("amk-validate: usage errors exit 2", "[tools]") {
  auto none = run_tool(kBin, "");
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Contains("no input files"));
  auto unknown = run_tool(kBin, "--no-such-flag " + arg("valid.json"));
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Contains("--no-such-flag"));
  auto twice = run_tool(kBin, "- -", fixture("valid.json"));
  CHECK(twice.exit_code == 2);
}

TEST_CASE("amk-validate: --help documents exit codes and the JSON schema", "[tools]") {
  auto help = run_tool(kBin, "--help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("Exit codes") && Contains("--json") && Contains("load_error") &&
                           Contains("\"rule\"") && Contains("--quiet"));
}

TEST_CASE("amk-validate: a missing file exits 1 and names the path", "[tools]") {
  const std::string missing = kFixtures + "does_not_exist.json";
  auto r = run_tool(kBin, shell_quote(missing));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("amk-validate: " + missing + ": "));
  CHECK_THAT(r.err, Contains("hint:"));
}

TEST_CASE("amk-validate: a malformed file exits 1 with the file named", "[tools]") {
  auto r = run_tool(kBin, arg("malformed.json"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("amk-validate: " + fixture("malformed.json") + ": "));
}

TEST_CASE("amk-validate: a valid program is ACCEPTED with exit 0", "[tools]") {
  auto r = run_tool(kBin, arg("valid.json"));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains(fixture("valid.json") + ": ACCEPTED"));
  CHECK_THAT(r.out, Contains("stats: tasks=3"));
}

TEST_CASE("amk-validate: a racy program is REJECTED with exit 1 and its errors", "[tools]") {
  auto r = run_tool(kBin, arg("rejected.json"));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Contains(fixture("rejected.json") + ": REJECTED"));
  CHECK_THAT(r.out, Contains("error [race."));
  // Every file is reported even when an earlier one fails.
  auto both = run_tool(kBin, arg("rejected.json") + " " + arg("valid.json"));
  CHECK(both.exit_code == 1);
  CHECK_THAT(both.out, Contains("REJECTED") && Contains("ACCEPTED"));
}

TEST_CASE("amk-validate: '-' reads standard input", "[tools]") {
  auto ok = run_tool(kBin, "-", fixture("valid.json"));
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Contains("<stdin>: ACCEPTED"));
  auto bad = run_tool(kBin, "-", fixture("rejected.json"));
  CHECK(bad.exit_code == 1);
  auto empty = run_tool(kBin, "-");  // /dev/null: an empty document
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.err, Contains("amk-validate: <stdin>: "));
}

TEST_CASE("amk-validate: --quiet prints only rejected files", "[tools]") {
  auto r = run_tool(kBin, "--quiet " + arg("valid.json") + " " + arg("rejected.json"));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, !Contains("ACCEPTED"));
  CHECK_THAT(r.out, Contains("REJECTED") && Contains("error ["));
  CHECK_THAT(r.out, !Contains("stats:"));
  auto quiet_ok = run_tool(kBin, "-q " + arg("valid.json"));
  CHECK(quiet_ok.exit_code == 0);
  CHECK(quiet_ok.out.empty());
}

TEST_CASE("amk-validate: --json follows the documented schema", "[tools]") {
  const std::string missing = kFixtures + "does_not_exist.json";
  auto r = run_tool(kBin, "--json " + arg("valid.json") + " " + arg("rejected.json") + " " + shell_quote(missing) +
                              " " + arg("malformed.json"));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc.at("tool") == "amk-validate");
  CHECK(doc.at("version").is_string());
  CHECK(doc.at("ir_version") == "0.2.0");
  CHECK(doc.at("ok") == false);
  const auto& files = doc.at("files");
  REQUIRE(files.size() == 4);
  for (const auto& f : files) {
    CHECK(f.at("file").is_string());
    CHECK(f.at("ok").is_boolean());
    CHECK((f.at("load_error").is_null() || f.at("load_error").is_string()));
    CHECK(f.at("errors").is_array());
    CHECK(f.at("warnings").is_array());
    CHECK((f.at("stats").is_null() || f.at("stats").is_object()));
  }

  const auto& valid = files[0];
  CHECK(valid.at("file") == fixture("valid.json"));
  CHECK(valid.at("ok") == true);
  CHECK(valid.at("load_error").is_null());
  CHECK(valid.at("errors").empty());
  REQUIRE(valid.at("stats").is_object());
  for (const char* key : {"tasks", "buffers", "counters", "edges", "sms_used", "unassigned_tasks", "critical_path",
                          "weight_bytes", "scratch_bytes", "hb_queries"}) {
    INFO(key);
    CHECK(valid.at("stats").at(key).is_number_integer());
  }
  CHECK(valid.at("stats").at("tasks") == 3);
  CHECK(valid.at("stats").at("buffers") == 5);
  CHECK(valid.at("stats").at("bandwidth_bound_us").is_number());

  const auto& rejected = files[1];
  CHECK(rejected.at("ok") == false);
  CHECK(rejected.at("load_error").is_null());
  REQUIRE_FALSE(rejected.at("errors").empty());
  bool names_task_2 = false;
  for (const auto& e : rejected.at("errors")) {
    CHECK(e.at("rule").is_string());
    CHECK(e.at("message").is_string());
    CHECK(e.at("tasks").is_array());
    CHECK(e.at("buffers").is_array());
    CHECK(e.at("counters").is_array());
    for (const auto& t : e.at("tasks")) names_task_2 = names_task_2 || t == 2;
  }
  CHECK(names_task_2);

  const auto& gone = files[2];
  CHECK(gone.at("ok") == false);
  REQUIRE(gone.at("load_error").is_string());
  CHECK(gone.at("stats").is_null());
  CHECK(files[3].at("load_error").is_string());
}
