// tests/schedule/models_test.cpp: real Llama shapes (1B, 8B, 70B) lower and validate, within a
// time budget, and the amk-compile binary reproduces examples/tiny_llama/program.json byte for byte.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"

using namespace amk;

namespace {

const std::string kSrc = AMK_SOURCE_DIR;
const std::string kBin = AMK_BINARY_DIR;

struct Timed {
  ir::ValidationResult result;
  size_t tasks = 0;
  double lower_s = 0, validate_s = 0;
};

Timed lower_and_validate(const std::string& config, const ir::ScheduleConfig& c, const char* target_name,
                         int64_t max_seq) {
  auto model = schedule::model_config_load(kSrc + "/tests/fixtures/configs/" + config);
  REQUIRE(model.is_ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto p = schedule::lower(*model, c, *targets::target_find(target_name), {max_seq, ir::DType::BF16, std::nullopt});
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  const auto t1 = std::chrono::steady_clock::now();
  Timed out;
  out.result = ir::validate(*p);
  const auto t2 = std::chrono::steady_clock::now();
  out.tasks = p->tasks.size();
  out.lower_s = std::chrono::duration<double>(t1 - t0).count();
  out.validate_s = std::chrono::duration<double>(t2 - t1).count();
  // Reported on stderr so the timings can be quoted; Catch does not capture it.
  std::fprintf(stderr, "[schedule] %s on %s: %zu tasks, lowered in %.3f s, validated in %.3f s\n", config.c_str(),
               target_name, out.tasks, out.lower_s, out.validate_s);
  return out;
}

ir::ScheduleConfig tuned(int64_t n_tile = 128) {
  ir::ScheduleConfig c;
  c.fusion_grouping = schedule::fusion_all_groups();
  c.tiling["gemv"]["N_tile"] = n_tile;
  c.tiling["attention"]["kv_partitions"] = 4;
  return c;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int run(const std::string& command) {
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("models: Llama-3.2-1B and Llama-3-8B programs validate", "[schedule]") {
  for (const char* config : {"llama-3.2-1b.json", "llama-3-8b.json", "tinyllama-1.1b.json", "smollm-135m.json"}) {
    for (const ir::ScheduleConfig& c : {ir::ScheduleConfig{}, tuned()}) {
      const Timed t = lower_and_validate(config, c, "h100", 2048);
      INFO(config << "\n" << t.result.report());
      CHECK(t.result.ok);
    }
  }
  const Timed amd = lower_and_validate("llama-3-8b.json", tuned(), "mi300x", 8192);
  CHECK(amd.result.ok);
}

TEST_CASE("models: the gpu-decode preset lowers real shapes into valid programs", "[schedule]") {
  for (const char* config : {"llama-3.2-1b.json", "llama-3-8b.json", "smollm-135m.json"}) {
    for (const int64_t max_seq : {int64_t{256}, int64_t{8192}}) {
      auto model = schedule::model_config_load(kSrc + "/tests/fixtures/configs/" + config);
      REQUIRE(model.is_ok());
      if (max_seq > model->max_position_embeddings) continue;
      auto c = schedule::schedule_config_from_json_text(
          schedule::decode_preset_json(*model, *targets::target_find("h200"), max_seq, schedule::DecodePreset{}), "preset");
      INFO(config << ", max_seq " << max_seq << ": " << c.status().message());
      REQUIRE(c.is_ok());
      const Timed t = lower_and_validate(config, *c, "h100", max_seq);
      INFO(t.result.report());
      CHECK(t.result.ok);
    }
  }
}

TEST_CASE("models: a Llama-3.1-70B program lowers and validates in seconds", "[schedule][slow]") {
  // N_tile 256 (~30k tasks) keeps the sanitizer build well inside the guard too.
  const Timed t = lower_and_validate("llama-3.1-70b.json", tuned(256), "h200", 8192);
  INFO(t.result.report());
  CHECK(t.result.ok);
  CHECK(t.tasks > 20000);
  CHECK(t.lower_s + t.validate_s < 30.0);  // a generous guard; the real time is printed above
}

TEST_CASE("amk-compile: reproduces the bundled example and maps failures to exit codes", "[schedule][tools]") {
  const std::string bin = AMK_COMPILE_BIN;
  const std::string tiny = kSrc + "/tests/fixtures/tiny_llama/config.json";
  const std::string out = kBin + "/schedule_test_tiny_program.json";
  std::remove(out.c_str());
  REQUIRE(run(bin + " " + tiny + " --target cpu --max-seq 256 --dtype f32 --weight-dtype bf16 -o " + out) == 0);
  const std::string produced = read_file(out);
  const std::string bundled = read_file(kSrc + "/examples/tiny_llama/program.json");
  REQUIRE_FALSE(bundled.empty());
  // If this fails after an intended lowering change, run scripts/regen-examples.sh and review the diff.
  CHECK(produced == bundled);

  CHECK(run(bin + " " + tiny + " --target cpu") == 2);                         // no -o
  CHECK(run(bin + " " + tiny + " --target cpu --dtype int8 -o " + out) == 2);  // bad flag value
  CHECK(run(bin + " " + tiny + " --target nosuchgpu -o " + out) == 1);
  CHECK(run(bin + " /nonexistent/config.json --target cpu -o " + out) == 1);
  CHECK(run(bin + " " + tiny + " --target cpu --max-seq 100000 -o " + out) == 1);  // > max_position_embeddings
  const std::string json_out = kBin + "/schedule_test_compile.json";
  REQUIRE(std::system((bin + " " + tiny + " --target h100 --json -o " + out + " > " + json_out).c_str()) == 0);
  const std::string doc = read_file(json_out);
  CHECK(doc.find("\"tool\": \"amk-compile\"") != std::string::npos);
  CHECK(doc.find("\"ok\": true") != std::string::npos);
  CHECK(doc.find("\"bandwidth_bound_us\"") != std::string::npos);
}

TEST_CASE("amk-compile --preset gpu-decode writes the preset's schedule", "[schedule][tools]") {
  const std::string bin = AMK_COMPILE_BIN;
  const std::string tiny = kSrc + "/tests/fixtures/tiny_llama/config.json";
  const std::string out = kBin + "/schedule_test_preset_program.json";
  std::remove(out.c_str());
  REQUIRE(run(bin + " " + tiny + " --target h100 --max-seq 256 --preset gpu-decode -o " + out) == 0);
  const nlohmann::json written = nlohmann::json::parse(read_file(out));
  auto model = schedule::model_config_load(tiny);
  REQUIRE(model.is_ok());
  const nlohmann::json preset =
      nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h100"), 256, schedule::DecodePreset{}));
  CHECK(written["config"]["sm_assignment"] == "stage_balance");
  for (const char* proj : {"q_proj", "o_proj", "gate_proj", "down_proj", "lm_head"}) {
    INFO(proj);
    CHECK(written["config"]["tiling"][proj]["N_tile"] == preset["tiling"][proj]["N_tile"]);
  }
  CHECK(written["config"]["fusion_grouping"] == preset["fusion_grouping"]);
  // On an H100 the preset folds the MLP (docs/FOLD.md), and the program says its logits are not
  // bit-reproducible; --mlp-fold off keeps the two MLP stages, --mlp-fold on folds on an H200 too.
  const auto fold_tasks = [](const nlohmann::json& program) {
    return std::count_if(program["tasks"].begin(), program["tasks"].end(), [](const nlohmann::json& t) {
      return t.value("label", std::string()).find("mlp_fold") != std::string::npos;
    });
  };
  CHECK(fold_tasks(written) > 0);
  CHECK(written["meta"]["reproducible"] == false);
  REQUIRE(run(bin + " " + tiny + " --target h100 --max-seq 256 --preset gpu-decode --mlp-fold off -o " + out) == 0);
  const nlohmann::json unfolded = nlohmann::json::parse(read_file(out));
  CHECK(fold_tasks(unfolded) == 0);
  CHECK_FALSE(unfolded["meta"].contains("reproducible"));
  schedule::DecodePreset off;
  off.mlp_fold = schedule::MlpFold::Off;
  CHECK(unfolded["config"]["fusion_grouping"] ==
        nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h100"), 256, off))["fusion_grouping"]);
  REQUIRE(run(bin + " " + tiny + " --target h200 --max-seq 256 --preset gpu-decode -o " + out) == 0);
  CHECK(fold_tasks(nlohmann::json::parse(read_file(out))) == 0);
  REQUIRE(run(bin + " " + tiny + " --target h200 --max-seq 256 --preset gpu-decode --mlp-fold on -o " + out) == 0);
  CHECK(fold_tasks(nlohmann::json::parse(read_file(out))) > 0);

  // Usage errors (2): an unknown preset, a preset with a schedule file; bad input (1): a target
  // without SMs, named in the message. Nothing is written in any of them.
  std::remove(out.c_str());
  CHECK(run(bin + " " + tiny + " --target h100 --preset fastest -o " + out) == 2);
  CHECK(run(bin + " " + tiny + " --target h100 --preset gpu-decode --mlp-fold maybe -o " + out) == 2);
  CHECK(run(bin + " " + tiny + " --target h100 --mlp-fold on -o " + out) == 2);  // --mlp-fold needs --preset
  const std::string empty_schedule = kBin + "/schedule_test_empty_schedule.json";
  std::ofstream(empty_schedule) << "{}";
  CHECK(run(bin + " " + tiny + " --target h100 --schedule " + empty_schedule + " -o " + out) == 0);  // a valid file
  std::remove(out.c_str());
  CHECK(run(bin + " " + tiny + " --target h100 --preset gpu-decode --schedule " + empty_schedule + " -o " + out) == 2);
  const std::string err = kBin + "/schedule_test_preset_err.txt";
  CHECK(std::system((bin + " " + tiny + " --target cpu --preset gpu-decode -o " + out + " 2> " + err).c_str()) != 0);
  CHECK(run(bin + " " + tiny + " --target cpu --preset gpu-decode -o " + out) == 1);
  const std::string message = read_file(err);
  CHECK(message.find("target 'cpu' has num_sms 0") != std::string::npos);
  CHECK_FALSE(std::ifstream(out).good());
}
