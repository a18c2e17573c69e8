// tests/tools/amk_run_trace_test.cpp: `amk-run --trace` on the bundled tiny Llama writes a Chrome
// trace whose run slices cover every task of every launch, and a trace that cannot be written
// fails cleanly with exit 1 and leaves no file behind.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "tools/tool_runner.h"

using amk::test::read_text;
using amk::test::run_tool;
using amk::test::shell_quote;

namespace {
const std::string kProgramPath = AMK_SOURCE_DIR "/examples/tiny_llama/program.json";
const std::string kArgs = shell_quote(kProgramPath) + " --weights " +
                          shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/model.safetensors") +
                          " --backend cpu --threads 2 --prompt-ids 1,17 --max-tokens 2";
}  // namespace

TEST_CASE("amk-run --trace writes a Perfetto-loadable trace of every launch", "[tools]") {
  const std::string path = AMK_BINARY_DIR "/amk_run_trace_test.json";
  std::remove(path.c_str());
  auto r = run_tool(AMK_RUN_BIN, kArgs + " --trace " + shell_quote(path));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("trace:") != std::string::npos);
  const auto doc = nlohmann::json::parse(read_text(path), nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  auto program = amk::ir::program_load(kProgramPath);
  REQUIRE(program.is_ok());
  const size_t tasks = program->tasks.size();

  std::map<int, int> runs_per_step;
  int tracks = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") ++tracks;
    if (e.at("ph") == "X" && e.at("cat") != "wait" && e.at("cat") != "launch")
      ++runs_per_step[e.at("args").at("step").get<int>()];
  }
  CHECK(tracks == 3);  // 2 workers + launches
  REQUIRE(runs_per_step.size() == 3);  // 2 prompt tokens + 1 fed-back token
  for (const auto& [step, n] : runs_per_step) CHECK(static_cast<size_t>(n) == tasks);
}

TEST_CASE("amk-run --trace into a missing directory fails with exit 1 and writes nothing", "[tools]") {
  const std::string dir = AMK_BINARY_DIR "/no_such_dir_for_trace";
  auto r = run_tool(AMK_RUN_BIN, kArgs + " --trace " + shell_quote(dir + "/t.json"));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no_such_dir_for_trace/t.json") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir));
}
