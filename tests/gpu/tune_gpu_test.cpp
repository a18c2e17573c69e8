// tests/gpu/tune_gpu_test.cpp: amk-bench's DecodeRig (tools/bench/decode_rig.h) and `amk-bench tune`
// (tools/bench/tune_bench.h) on the device, on the bundled tiny Llama's config with random weights:
// the preset's rig passes the correctness check against the cuBLAS baseline step by step, and tune
// measures every distinct candidate of a small space and writes one of them, a schedule that
// amk-compile's loader accepts and lowers.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <set>

#include "gpu_harness.h"
#include "ir/text_file.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "tools/bench/decode_bench.h"
#include "tools/bench/decode_rig.h"
#include "tools/bench/tune_bench.h"
#include "vm/cuda/cuda_executor.h"

using namespace amk;

namespace {

const std::string kConfig = std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/config.json";

std::string slurp(const std::string& path) {
  Result<std::string> text = ir::read_text_file(path, "file");
  return text ? *text : std::string();
}

/// The tiny Llama's config and the target the device's name resolves to.
struct TinyOnDevice {
  schedule::ModelConfig model;
  ir::GpuTarget target;
  TinyOnDevice() {
    gputest::require_gpu();
    auto m = schedule::model_config_load(kConfig);
    REQUIRE(m.is_ok());
    model = *m;
    auto t = bench::resolve_bench_target("auto", vm::cuda_device_name());
    REQUIRE(t.is_ok());
    target = *t;
  }
};

}  // namespace

TEST_CASE("decode rig: the preset's schedule passes the check against the cuBLAS baseline and times", "[gpu]") {
  const TinyOnDevice tiny;
  const schedule::ModelConfig* model = &tiny.model;
  const ir::GpuTarget* target = &tiny.target;
  const int64_t max_seq = bench::bench_max_seq(64, 12);
  CHECK(max_seq == 256);
  auto cfg = schedule::schedule_config_from_json_text(
      schedule::decode_preset_json(*model, *target, max_seq, schedule::DecodePreset{}), "preset");
  REQUIRE(cfg.is_ok());
  auto rig = bench::build_decode_rig(*model, *target, *cfg, max_seq, 7, "cublas-graph");
  REQUIRE(rig.is_ok());
  REQUIRE((*rig)->base != nullptr);
  bench::DecodeCheck check;
  REQUIRE(bench::check_decode_rig(**rig, 12, &check).is_ok());
  INFO(check.mismatch);
  CHECK(check.mismatch.empty());
  CHECK(check.agree + check.near_ties == 12);
  CHECK(check.max_rel_l2 < 0.1);
  double amk_ms = 0.0, base_ms = 0.0;
  REQUIRE(bench::time_decode_rig(**rig, check.last_token, 64, 1, 3, &amk_ms).is_ok());
  REQUIRE(bench::time_baseline_rig(**rig, check.last_token, 64, 1, 3, &base_ms).is_ok());
  CHECK(amk_ms > 0.0);
  CHECK(base_ms > 0.0);

  // Without a baseline the check only decodes; timing the missing baseline is refused.
  auto bare = bench::build_decode_rig(*model, *target, *cfg, max_seq, 7, "none");
  REQUIRE(bare.is_ok());
  REQUIRE(bench::check_decode_rig(**bare, 3, &check).is_ok());
  CHECK(check.agree == 0);
  CHECK(bench::time_baseline_rig(**bare, 1, 64, 0, 1, &base_ms).code() == StatusCode::Internal);
}

TEST_CASE("amk-bench tune: a small space on the device, every candidate checked, one of them written", "[gpu]") {
  const TinyOnDevice tiny;
  const schedule::ModelConfig* model = &tiny.model;
  const ir::GpuTarget* target = &tiny.target;
  const std::string space_path = "tune_gpu_test_space.json";
  {
    std::ofstream(space_path) << R"({"tiles_per_stage": [1, 2], "argmax_tiles_per_sm": [1, 0]})";
  }
  bench::TuneBenchOptions o;
  o.model = kConfig;
  o.ctx = {32, 100};
  o.space = space_path;
  o.out = "tune_gpu_test_schedule.json";
  o.tokens = 3;
  o.warmup = 1;
  o.check_steps = 4;
  o.rounds = 1;
  o.search.min_gain = 0.0;  // adopt any faster candidate: exercises the side-by-side re-timing too
  std::remove(o.out.c_str());
  REQUIRE(bench::run_tune_bench(o) == 0);
  const std::string written = slurp(o.out);
  REQUIRE_FALSE(written.empty());
  CHECK_FALSE(std::ifstream(o.out + ".tmp").good());

  // The file is the lowered ScheduleConfig of one of the space's four presets.
  const int64_t max_seq = bench::bench_max_seq(100, 4);
  std::set<std::string> candidates;
  for (int64_t tiles : {1, 2})
    for (int64_t argmax : {1, 0}) {
      schedule::DecodePreset p;
      p.tiles_per_stage = tiles;
      p.argmax_tiles_per_sm = argmax;
      candidates.insert(nlohmann::json::parse(schedule::decode_preset_json(*model, *target, max_seq, p)).dump());
    }
  CHECK(candidates.count(nlohmann::json::parse(written).dump()) == 1);
  auto cfg = schedule::schedule_config_load(o.out);
  REQUIRE(cfg.is_ok());
  schedule::LowerOptions lo;
  lo.max_seq = max_seq;
  lo.dtype = ir::DType::BF16;
  CHECK(schedule::lower(*model, *cfg, *target, lo).is_ok());

  // A failed run leaves the earlier result alone: a bad space is refused before anything is written.
  {
    std::ofstream(space_path) << R"({"tiles_per_stage": [0, 1, 1]})";
  }
  CHECK(bench::run_tune_bench(o) == 1);
  CHECK(slurp(o.out) == written);
  std::remove(o.out.c_str());
  std::remove(space_path.c_str());
}

#endif  // AMK_GPU_TESTS
