// tests/schedule/mlp_fold_preset_test.cpp: the gpu-decode preset's MLP fold knob (MlpFold): auto
// folds where the target's HBM share per SM is small (an H100, not an H200), only shapes whose
// fold rides the weight stream, never against an explicit choice; on / off override it. The
// preset's program lowers and validates either way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"

using namespace amk;

namespace {

schedule::ModelConfig config(const std::string& name) {
  auto m = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/" + name);
  REQUIRE(m.is_ok());
  return *m;
}

ir::GpuTarget target(const char* name) {
  auto t = targets::target_find(name);
  REQUIRE(t.is_ok());
  return *t;
}

bool has_fold_group(const std::string& preset_json) {
  const auto groups = nlohmann::json::parse(preset_json)["fusion_grouping"];
  return std::any_of(groups.begin(), groups.end(), [](const nlohmann::json& g) {
    return std::find(g.begin(), g.end(), "silu_mul") != g.end() && std::find(g.begin(), g.end(), "gate_proj") != g.end();
  });
}

bool folds(const schedule::DecodePreset& p, const schedule::ModelConfig& m, const ir::GpuTarget& t,
           ir::DType dtype = ir::DType::BF16) {
  const bool rule = schedule::decode_preset_mlp_fold(p, m, t, 256, dtype);
  CHECK(has_fold_group(schedule::decode_preset_json(m, t, 256, p, dtype)) == rule);  // the JSON says what the rule does
  return rule;
}

}  // namespace

TEST_CASE("gpu-decode preset: the auto MLP fold picks the targets with a small HBM share per SM", "[schedule][fold]") {
  const schedule::DecodePreset autos;
  REQUIRE(autos.mlp_fold == schedule::MlpFold::Auto);
  const schedule::ModelConfig llama1b = config("llama-3.2-1b.json"), llama8b = config("llama-3-8b.json");
  // H100: 3350 GB/s over 132 SMs = 25.4 per SM (measured to gain); H200: 36.4 (measured to lose).
  CHECK(schedule::mlp_fold_target_ok(target("h100")));
  CHECK_FALSE(schedule::mlp_fold_target_ok(target("h200")));
  CHECK(folds(autos, llama1b, target("h100")));
  CHECK(folds(autos, llama8b, target("h100")));
  CHECK_FALSE(folds(autos, llama1b, target("h200")));
  CHECK_FALSE(folds(autos, llama8b, target("h200")));
  // No weight stream's fold: AMD (its VM runs folds off the stream), an A100 (sm_80, no ring), the CPU.
  CHECK_FALSE(folds(autos, llama1b, target("mi300x")));
  CHECK_FALSE(folds(autos, llama1b, target("a100")));
  CHECK_FALSE(schedule::mlp_fold_target_ok(target("cpu")));
  ir::GpuTarget unknown_bandwidth = target("h100");
  unknown_bandwidth.hbm_bandwidth_gbs = 0.0;
  CHECK_FALSE(schedule::mlp_fold_target_ok(unknown_bandwidth));
  // The bound itself: a target just over it does not fold, one at it does.
  ir::GpuTarget edge = target("h100");
  edge.hbm_bandwidth_gbs = schedule::kMlpFoldMaxGbsPerSm * static_cast<double>(edge.num_sms);
  CHECK(schedule::mlp_fold_target_ok(edge));
  edge.hbm_bandwidth_gbs *= 1.01;
  CHECK_FALSE(schedule::mlp_fold_target_ok(edge));
}

TEST_CASE("gpu-decode preset: the auto MLP fold takes only shapes whose fold rides the weight stream", "[schedule][fold]") {
  const schedule::DecodePreset autos;
  const ir::GpuTarget h100 = target("h100");
  // Llama-3.1-70B's hidden 8192 is past what a streamed fold task keeps in registers.
  const schedule::ModelConfig llama70b = config("llama-3.1-70b.json");
  REQUIRE(llama70b.hidden_size > schedule::kMlpFoldAutoMaxHidden);
  CHECK_FALSE(folds(autos, llama70b, h100));
  const schedule::ModelConfig llama1b = config("llama-3.2-1b.json");
  CHECK(folds(autos, llama1b, h100, ir::DType::F16));
  CHECK_FALSE(folds(autos, llama1b, h100, ir::DType::F32));  // measured only with 16-bit weights
}

TEST_CASE("gpu-decode preset: on / off override the auto MLP fold, and auto yields to explicit choices", "[schedule][fold]") {
  const schedule::ModelConfig llama1b = config("llama-3.2-1b.json");
  const ir::GpuTarget h100 = target("h100"), h200 = target("h200");
  schedule::DecodePreset on, off;
  on.mlp_fold = schedule::MlpFold::On;
  off.mlp_fold = schedule::MlpFold::Off;
  CHECK(folds(on, llama1b, h200));
  CHECK_FALSE(folds(off, llama1b, h100));
  // A dropped group auto would replace, or the one the fold needs, keeps the fold off.
  for (const char* dropped : {"rmsnorm,gate_proj,up_proj", "silu_mul,down_proj,residual_add", "o_proj,residual_add"}) {
    INFO(dropped);
    schedule::DecodePreset p;
    p.drop_fusion = {dropped};
    CHECK_FALSE(folds(p, llama1b, h100));
  }
  // The attention in o_proj and the fold exclude each other: asked for, the attention wins over auto.
  schedule::DecodePreset in_o;
  in_o.attention_in_o_proj = schedule::AttentionInOProj::On;
  CHECK_FALSE(folds(in_o, llama1b, h100));
  // The names the command-line tools take.
  for (const char* name : {"auto", "on", "off"}) CHECK(schedule::mlp_fold_name(*schedule::mlp_fold_from_name(name)) == name);
  CHECK_FALSE(schedule::mlp_fold_from_name("yes").has_value());
}

TEST_CASE("gpu-decode preset: the H100's auto-folded 1B and 8B programs lower and validate", "[schedule][fold]") {
  const ir::GpuTarget h100 = target("h100");
  for (const char* name : {"llama-3.2-1b.json", "llama-3-8b.json"}) {
    INFO(name);
    const schedule::ModelConfig m = config(name);
    for (const int64_t max_seq : {int64_t{256}, int64_t{8192}}) {
      INFO("max_seq " << max_seq);
      auto cfg = schedule::schedule_config_from_json_text(
          schedule::decode_preset_json(m, h100, max_seq, schedule::DecodePreset{}), "preset");
      REQUIRE(cfg.is_ok());
      auto p = schedule::lower(m, *cfg, h100, schedule::LowerOptions{max_seq, ir::DType::BF16, std::nullopt});
      INFO(p.status().message());
      REQUIRE(p.is_ok());
      CHECK(p->meta["reproducible"] == false);  // the fold's atomic adds, said in the program
      const auto folds_in_program = std::count_if(p->tasks.begin(), p->tasks.end(), [](const ir::Task& t) {
        return t.label.find("mlp_fold") != std::string::npos;
      });
      CHECK(folds_in_program > 0);
      const ir::ValidationResult v = ir::validate(*p);
      INFO(v.report());
      CHECK(v.ok);
    }
  }
}
