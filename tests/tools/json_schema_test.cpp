// tests/tools/json_schema_test.cpp: every tool's --json output parses and carries the shared
// header of docs/JSON.md ({tool, version, ok, exit_code, error}) and its documented fields, on
// success and on failure. Runs the real binaries on the bundled tiny Llama.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "tools/tool_runner.h"

using amk::test::run_tool;
using amk::test::shell_quote;

namespace {

const std::string kProgram = shell_quote(AMK_SOURCE_DIR "/examples/tiny_llama/program.json");
const std::string kWeights = shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/model.safetensors");

/// Parse stdout and check the shared header; returns the document.
nlohmann::json parsed(const amk::test::ToolRun& r, const char* tool) {
  INFO(r.out << r.err);
  nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  REQUIRE(doc.is_object());
  CHECK(doc.at("tool") == tool);
  CHECK(doc.at("version").is_string());
  CHECK(doc.at("ok").is_boolean());
  CHECK(doc.at("exit_code") == r.exit_code);
  CHECK(doc.at("ok") == (r.exit_code == 0));
  if (r.exit_code == 0) {
    CHECK(doc.at("error").is_null());
  } else {
    CHECK(doc.at("error").at("code").is_string());
    CHECK(doc.at("error").at("message").is_string());
  }
  // The header comes first, in this order, in every tool (top-level keys are indented by 2).
  size_t last = 0;
  for (const char* key : {"tool", "version", "ok", "exit_code", "error"}) {
    const size_t at = r.out.find(std::string("\n  \"") + key + "\"");
    INFO(key);
    CHECK(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
  return doc;
}

void check_latency(const nlohmann::json& lat) {
  for (const char* key : {"median", "p90", "min", "max", "mean"}) {
    INFO(key);
    CHECK(lat.at(key).is_number());
  }
  CHECK(lat.at("count").is_number_integer());
  CHECK(lat.at("min").get<double>() <= lat.at("median").get<double>());
  CHECK(lat.at("median").get<double>() <= lat.at("max").get<double>());
}

}  // namespace

TEST_CASE("json: amk-run success and failure documents", "[tools]") {
  auto r = run_tool(AMK_RUN_BIN, kProgram + " --weights " + kWeights +
                                     " --backend cpu --threads 2 --prompt-ids 1,17 --max-tokens 3 --json");
  REQUIRE(r.exit_code == 0);
  const auto doc = parsed(r, "amk-run");
  CHECK(doc.at("program").is_string());
  CHECK(doc.at("backend") == "cpu");
  CHECK(doc.at("workers") == 2);
  CHECK(doc.at("tokens").at("prompt") == nlohmann::json({1, 17}));
  CHECK(doc.at("tokens").at("generated").size() == 3);
  CHECK(doc.at("steps") == 4);  // 2 prompt launches + 2 fed-back tokens
  check_latency(doc.at("latency_us"));
  CHECK(doc.at("latency_us").at("generation_median").is_number());
  CHECK(doc.at("tokens_per_s").get<double>() > 0);
  CHECK(doc.at("trace").is_null());
  CHECK(r.err.empty());  // no progress bar when stderr is not a terminal

  auto bad = run_tool(AMK_RUN_BIN, shell_quote(AMK_BINARY_DIR "/no_such_program.json") + " --random-weights 1 --json");
  CHECK(bad.exit_code == 1);
  const auto fail = parsed(bad, "amk-run");
  CHECK(fail.at("error").at("message").get<std::string>().find("no_such_program") != std::string::npos);
}

TEST_CASE("json: amk-compile success and failure documents", "[tools]") {
  const std::string out = AMK_BINARY_DIR "/json_schema_compile.json";
  const std::string config = shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/config.json");
  auto r = run_tool(AMK_COMPILE_BIN, config + " --target cpu --json -o " + shell_quote(out));
  REQUIRE(r.exit_code == 0);
  const auto doc = parsed(r, "amk-compile");
  CHECK(doc.at("program") == out);
  CHECK(doc.at("config").is_string());
  CHECK(doc.at("target") == "cpu");
  for (const char* key : {"tasks", "counters", "buffers", "weight_bytes", "scratch_bytes"}) {
    INFO(key);
    CHECK(doc.at(key).is_number_integer());
  }
  CHECK(doc.at("errors").empty());

  auto bad = run_tool(AMK_COMPILE_BIN, config + " --target nosuchgpu --json -o " + shell_quote(out));
  CHECK(bad.exit_code == 1);
  const auto fail = parsed(bad, "amk-compile");
  CHECK(fail.at("error").at("message").get<std::string>().find("nosuchgpu") != std::string::npos);
}

TEST_CASE("json: amk-bench cpu document", "[tools]") {
  auto r = run_tool(AMK_BENCH_BIN,
                    "cpu --size-mb 8 --threads 1 --busy 1 --json --program " + kProgram + " --weights " + kWeights);
  REQUIRE(r.exit_code == 0);
  const auto doc = parsed(r, "amk-bench");
  CHECK(doc.at("bench") == "cpu");
  CHECK(doc.at("busy_threads") == 1);
  CHECK(doc.at("backend") == "cpu");
  CHECK(doc.at("program").is_string());
  CHECK(doc.at("size_mb") == 8);
  REQUIRE(doc.at("rows").size() == 1);
  const auto& row = doc.at("rows")[0];
  CHECK(row.at("threads") == 1);
  for (const char* key : {"copy_gbs", "gemv_weight_gbs", "gemv_ms", "gemv_fraction_of_copy", "tokens_per_s"}) {
    INFO(key);
    CHECK(row.at(key).get<double>() > 0);
  }

  auto bad = run_tool(AMK_BENCH_BIN, "cpu --size-mb 8 --threads 1 --json --program " +
                                         shell_quote(AMK_BINARY_DIR "/no_such_program.json") + " --weights " + kWeights);
  CHECK(bad.exit_code == 1);
  parsed(bad, "amk-bench");

  auto lonely = run_tool(AMK_BENCH_BIN, "cpu --size-mb 8 --threads 1 --busy 2");  // nothing to load
  CHECK(lonely.exit_code == 2);
  CHECK_THAT(lonely.err, Catch::Contains("--busy needs --program"));
}

TEST_CASE("json: amk-bench decode and launch documents, with or without a GPU", "[tools]") {
  // CI has no GPU: the documents are then the failure form (exit 3, GpuRuntime / Unsupported).
  // On a GPU machine the same test checks the success form; either way the header is checked.
  const std::string model = shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/config.json");
  auto r = run_tool(AMK_BENCH_BIN, "decode --json --tokens 2 --warmup 0 --check-steps 2 --model " + model);
  REQUIRE((r.exit_code == 0 || r.exit_code == 3));
  const auto doc = parsed(r, "amk-bench");
  CHECK(doc.at("bench") == "decode");
  CHECK(doc.at("backend") == "cuda");
  if (r.exit_code == 0) {
    CHECK(doc.at("copy_bandwidth_gbs").get<double>() > 0);
    REQUIRE(doc.at("results").size() == 1);
    CHECK(doc.at("results")[0].at("amk_ms_per_token").get<double>() > 0);
  } else {
    const std::string code = doc.at("error").at("code");
    CHECK((code == "GpuRuntime" || code == "Unsupported"));
  }
  auto launch = run_tool(AMK_BENCH_BIN, "launch --json --launches 5 --chain 4");
  REQUIRE((launch.exit_code == 0 || launch.exit_code == 3));
  CHECK(parsed(launch, "amk-bench").at("bench") == "launch");

  // A config that is not a file is bad input (exit 1) when the build has the CUDA VM and a GPU,
  // and exit 3 before any input is read otherwise; both are documents.
  auto bad = run_tool(AMK_BENCH_BIN, "decode --json --model " + shell_quote(AMK_BINARY_DIR "/no_such_config.json"));
  REQUIRE((bad.exit_code == 1 || bad.exit_code == 3));
  parsed(bad, "amk-bench");

  // --drop-fusion takes only groups of the built-in schedule (a typo would time the default):
  // usage errors, exit 2, on any machine.
  auto typo = run_tool(AMK_BENCH_BIN, "decode --drop-fusion rope,kvappend --model " + model);
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("'rope,kvappend' is not a fusion group of the built-in schedule"));
  auto both = run_tool(AMK_BENCH_BIN, "decode --drop-fusion kv_append,rope --schedule x.json --model " + model);
  CHECK(both.exit_code == 2);
  // So is any other knob of the built-in schedule next to --schedule: it would be ignored.
  for (const char* knob : {"--tiles-per-stage 2", "--tile-kib 128", "--sm-assignment load_balance", "--kv-partitions 4"}) {
    INFO(knob);
    auto with_schedule = run_tool(AMK_BENCH_BIN, std::string("decode ") + knob + " --schedule x.json --model " + model);
    CHECK(with_schedule.exit_code == 2);
    CHECK_THAT(with_schedule.err, Catch::Contains("--schedule"));
  }
  auto bad_policy = run_tool(AMK_BENCH_BIN, "decode --sm-assignment fastest --model " + model);
  CHECK(bad_policy.exit_code == 2);
  // The knobs' ranges are the tune space's (preset_knob_range): one past either end is a usage
  // error naming the flag.
  for (const char* knob : {"--kv-partitions 17", "--heads-per-task -1", "--argmax-tiles-per-sm 65", "--tiles-per-sm 0"}) {
    INFO(knob);
    auto out_of_range = run_tool(AMK_BENCH_BIN, std::string("decode ") + knob + " --model " + model);
    CHECK(out_of_range.exit_code == 2);
    CHECK_THAT(out_of_range.err, Catch::Contains(std::string(knob).substr(0, std::string(knob).find(' '))));
  }
  // The launch watchdog (raised under ncu, whose replays take minutes) is a positive deadline.
  auto no_deadline = run_tool(AMK_BENCH_BIN, "decode --watchdog-ms 0 --model " + model);
  CHECK(no_deadline.exit_code == 2);
  CHECK_THAT(no_deadline.err, Catch::Contains("--watchdog-ms: Value 0 not in range"));
  // A long one is accepted: the run then fails on its input (1, or 3 without a GPU), not on usage.
  auto long_deadline = run_tool(AMK_BENCH_BIN, "decode --json --watchdog-ms 600000 --model " +
                                                   shell_quote(AMK_BINARY_DIR "/no_such_config.json"));
  CHECK((long_deadline.exit_code == 1 || long_deadline.exit_code == 3));
}

TEST_CASE("json: amk-validate follows the same header", "[tools]") {
  auto r = run_tool(AMK_VALIDATE_BIN, "--json " + kProgram);
  REQUIRE(r.exit_code == 0);
  const auto doc = parsed(r, "amk-validate");
  CHECK(doc.at("files").size() == 1);
  auto bad = run_tool(AMK_VALIDATE_BIN, "--json " + shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tools/rejected.json"));
  CHECK(bad.exit_code == 1);
  CHECK(parsed(bad, "amk-validate").at("error").at("code") == "ValidationFailed");
}
