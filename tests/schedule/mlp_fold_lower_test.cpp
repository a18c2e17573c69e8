// tests/schedule/mlp_fold_lower_test.cpp: the MLP fold's fusion group (docs/FOLD.md) in the
// lowering: what a layer becomes, what the group needs beside it, and that the result validates.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ir/opspec.h"
#include "ir/params.h"
#include "ir/validate.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"

using namespace amk;
using Catch::Matchers::Contains;

namespace {

const std::vector<std::string> kFold = {"rmsnorm", "gate_proj", "up_proj", "silu_mul", "down_proj", "residual_add"};

const schedule::ModelConfig& tiny() {
  static const schedule::ModelConfig m =
      *schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/config.json");
  return m;
}

/// Every built-in group, with the fold instead of the two MLP groups.
ir::ScheduleConfig fold_config() {
  ir::ScheduleConfig c;
  for (const auto& g : schedule::fusion_all_groups()) {
    const bool mlp = std::find(g.begin(), g.end(), "gate_proj") != g.end() ||
                     std::find(g.begin(), g.end(), "down_proj") != g.end();
    if (!mlp) c.fusion_grouping.push_back(g);
  }
  c.fusion_grouping.push_back(kFold);
  return c;
}

Result<ir::Program> lower_tiny(const ir::ScheduleConfig& c) {
  return schedule::lower(tiny(), c, *targets::target_find("cpu"),
                         schedule::LowerOptions{256, ir::DType::F32, ir::DType::BF16});
}

size_t count_recipe(const ir::Program& p, ir::FusedRecipe r) {
  const std::string name(ir::recipe_find(static_cast<int64_t>(r))->name);
  return static_cast<size_t>(std::count_if(p.tasks.begin(), p.tasks.end(), [&](const ir::Task& t) {
    return t.op == ir::Opcode::Fused && t.params.get_string("recipe") == name;
  }));
}

}  // namespace

TEST_CASE("mlp fold: a layer is qkv, attention, o_proj with a copy of h, and one stage of fold tasks", "[schedule][fold]") {
  ir::ScheduleConfig c = fold_config();
  c.tiling["gate_proj"]["N_tile"] = 48;  // tiny Llama: intermediate 256 -> 6 tiles (the last 16 wide)
  auto lowered = lower_tiny(c);
  INFO(lowered.status().message());
  REQUIRE(lowered.is_ok());
  const ir::Program& p = *lowered;
  const ir::ValidationResult v = ir::validate(p);
  INFO(v.report());
  REQUIRE(v.ok);
  const int64_t layers = tiny().num_hidden_layers, I = tiny().intermediate_size, H = tiny().hidden_size;
  CHECK(count_recipe(p, ir::FusedRecipe::RmsNormMlpFold) == static_cast<size_t>(layers * ((I + 47) / 48)));
  CHECK(count_recipe(p, ir::FusedRecipe::GemvAddCopy) > 0);
  CHECK(count_recipe(p, ir::FusedRecipe::GemvAdd) == 0);  // every o_proj tile also writes the copy
  CHECK(count_recipe(p, ir::FusedRecipe::SiluMulGemvAdd) == 0);
  for (const ir::Task& t : p.tasks) {
    CHECK(t.label.find("down_proj") == std::string::npos);
    CHECK(t.label.find("gate_proj") == std::string::npos);
  }
  int64_t stacked = 0;
  for (const ir::Buffer& b : p.buffers) {
    if (b.name == "h") CHECK(b.dtype == ir::DType::F32);
    if (!b.stacked()) continue;
    ++stacked;
    CHECK(b.shape == std::vector<int64_t>{I, 3, H});
    REQUIRE(b.stack.size() == 3);
    CHECK_THAT(b.stack[0].source, Contains("mlp.gate_proj.weight"));
    CHECK_FALSE(b.stack[0].transpose);
    CHECK_THAT(b.stack[1].source, Contains("mlp.up_proj.weight"));
    CHECK_THAT(b.stack[2].source, Contains("mlp.down_proj.weight"));
    CHECK(b.stack[2].transpose);
  }
  CHECK(stacked == layers);
  for (const ir::Task& t : p.tasks)
    if (t.op == ir::Opcode::Fused && t.params.get_string("recipe") == std::string("RMSNORM_MLP_FOLD"))
      CHECK((t.params.int_or("flags", 0) & ir::kFlagAccumulate) != 0);
  CHECK(p.meta["reproducible"] == false);
  // Without the fold nothing says a program is not reproducible.
  auto plain = lower_tiny(ir::ScheduleConfig{});
  REQUIRE(plain.is_ok());
  CHECK_FALSE(plain->meta.contains("reproducible"));
}

TEST_CASE("mlp fold: the group needs o_proj's residual group and excludes the other MLP groups", "[schedule][fold]") {
  ir::ScheduleConfig alone;
  alone.fusion_grouping = {kFold};
  const Status s = lower_tiny(alone).status();
  CHECK(s.code() == StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Contains("fusion_grouping[0]: the MLP fold needs the group [\"o_proj\", \"residual_add\"]"));

  ir::ScheduleConfig twice = fold_config();
  twice.fusion_grouping.push_back({"rmsnorm", "gate_proj", "up_proj"});
  CHECK_THAT(lower_tiny(twice).status().message(), Contains("gate_proj is already fused by"));
  ir::ScheduleConfig with_down = fold_config();
  with_down.fusion_grouping.push_back({"silu_mul", "down_proj"});
  CHECK_THAT(lower_tiny(with_down).status().message(), Contains("down_proj is already fused by"));
}
