// tests/tools/tune_cli_test.cpp: `amk-bench tune` as a user runs it. Its input is checked on the
// host before any device is needed, so usage errors (exit 2) and bad input (exit 1: config, space,
// output path) are the same on every machine and name the offending element; with good input, a
// machine without a GPU gets exit 3 and a GPU machine a written schedule. Nothing is ever left at
// --out by a failed run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "schedule/schedule_config.h"
#include "tools/tool_runner.h"

using namespace amk::test;
using Catch::Matchers::Contains;

namespace {

const std::string kModel = shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/config.json");

bool exists(const std::string& path) { return std::ifstream(path).good(); }

/// Files in the build tree whose name starts with `stem`'s file name followed by ".tmp".
int temporaries_of(const std::string& stem) {
  const std::string prefix = std::filesystem::path(stem).filename().string() + ".tmp";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(AMK_BINARY_DIR))
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}

std::string write_space(const std::string& name, const std::string& text) {
  const std::string path = std::string(AMK_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("amk-bench tune: usage errors are exit 2", "[tools]") {
  auto no_model = run_tool(AMK_BENCH_BIN, "tune");
  CHECK(no_model.exit_code == 2);
  CHECK_THAT(no_model.err, Contains("--model"));
  auto bad_ctx = run_tool(AMK_BENCH_BIN, "tune --ctx 128,x --model " + kModel);
  CHECK(bad_ctx.exit_code == 2);
  CHECK_THAT(bad_ctx.err, Contains("--ctx: 'x' is not a context length"));
  auto bad_gain = run_tool(AMK_BENCH_BIN, "tune --min-gain 150 --model " + kModel);
  CHECK(bad_gain.exit_code == 2);
  auto zero_passes = run_tool(AMK_BENCH_BIN, "tune --passes 0 --model " + kModel);
  CHECK(zero_passes.exit_code == 2);
}

TEST_CASE("amk-bench tune: bad input is exit 1 on any machine, named, and writes nothing", "[tools]") {
  const std::string out = std::string(AMK_BINARY_DIR) + "/tune_cli_out.json";
  std::remove(out.c_str());
  const std::string out_arg = " --out " + shell_quote(out);

  auto no_config = run_tool(AMK_BENCH_BIN, "tune --json --model " + shell_quote(AMK_BINARY_DIR "/no_such_config.json") + out_arg);
  CHECK(no_config.exit_code == 1);
  const auto doc = nlohmann::json::parse(no_config.out);
  CHECK(doc.at("tool") == "amk-bench");
  CHECK(doc.at("bench") == "tune");
  CHECK(doc.at("ok") == false);
  CHECK(doc.at("exit_code") == 1);
  CHECK(doc.at("error").at("code") == "InvalidArgument");
  CHECK_THAT(doc.at("error").at("message").get<std::string>(), Contains("no_such_config.json"));

  const std::string typo = write_space("tune_cli_typo.json", R"({"tiles_per_stage": [1, 2], "kv_partiton": [1]})");
  auto bad_axis = run_tool(AMK_BENCH_BIN, "tune --space " + shell_quote(typo) + " --model " + kModel + out_arg);
  CHECK(bad_axis.exit_code == 1);
  CHECK_THAT(bad_axis.err, Contains("tune_cli_typo.json: 'kv_partiton' is not a tune axis"));

  const std::string range = write_space("tune_cli_range.json", R"({"kv_partitions": [1, 17]})");
  auto bad_value = run_tool(AMK_BENCH_BIN, "tune --space " + shell_quote(range) + " --model " + kModel + out_arg);
  CHECK(bad_value.exit_code == 1);
  CHECK_THAT(bad_value.err, Contains("kv_partitions[1]: 17 is not in [0, 16]"));

  auto missing_space = run_tool(AMK_BENCH_BIN, "tune --space " + shell_quote(AMK_BINARY_DIR "/no_such_space.json") +
                                                   " --model " + kModel + out_arg);
  CHECK(missing_space.exit_code == 1);
  CHECK_THAT(missing_space.err, Contains("no_such_space.json: cannot open the tune space file"));

  const std::string nowhere = std::string(AMK_BINARY_DIR) + "/no_such_dir/schedule.json";
  auto bad_out = run_tool(AMK_BENCH_BIN, "tune --model " + kModel + " --out " + shell_quote(nowhere));
  CHECK(bad_out.exit_code == 1);
  CHECK_THAT(bad_out.err, Contains("--out " + nowhere + ": cannot create"));
  auto dir_out = run_tool(AMK_BENCH_BIN, "tune --model " + kModel + " --out " + shell_quote(AMK_BINARY_DIR));
  CHECK(dir_out.exit_code == 1);
  CHECK_THAT(dir_out.err, Contains(": is a directory"));

  // A named target needs no device, so a typo is refused here too, not after minutes on a GPU.
  auto bad_target = run_tool(AMK_BENCH_BIN, "tune --target h1000 --model " + kModel + out_arg);
  CHECK(bad_target.exit_code == 1);
  CHECK_THAT(bad_target.err, Contains("h1000"));

  CHECK_FALSE(exists(out));
  CHECK(temporaries_of(out) == 0);
}

TEST_CASE("amk-bench tune: good input needs a GPU (exit 3 without one) and then writes the schedule", "[tools]") {
  const std::string out = std::string(AMK_BINARY_DIR) + "/tune_cli_good.json";
  std::remove(out.c_str());
  // Whatever a user keeps at "<out>.tmp" is not ours to overwrite or remove.
  { std::ofstream(out + ".tmp") << "mine"; }
  const std::string space = write_space("tune_cli_space.json", R"({"tiles_per_stage": [1, 2]})");
  auto r = run_tool(AMK_BENCH_BIN, "tune --json --tokens 2 --warmup 0 --check-steps 2 --rounds 1 --space " +
                                       shell_quote(space) + " --model " + kModel + " --out " + shell_quote(out));
  REQUIRE((r.exit_code == 0 || r.exit_code == 3));
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("bench") == "tune");
  if (r.exit_code == 3) {
    const std::string code = doc.at("error").at("code");
    CHECK((code == "GpuRuntime" || code == "Unsupported"));
    CHECK_FALSE(exists(out));
  } else {
    CHECK(doc.at("candidates").size() == 2);
    CHECK(amk::schedule::schedule_config_load(out).is_ok());
  }
  CHECK(read_text(out + ".tmp") == "mine");
  CHECK(temporaries_of(out) == 1);  // the user's file alone: the probe and the writer left nothing
  std::remove(out.c_str());
  std::remove((out + ".tmp").c_str());
}
