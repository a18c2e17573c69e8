// tests/vm/mlp_fold_golden_test.cpp: the bundled tiny Llama lowered with the MLP fold (docs/FOLD.md)
// and run on the CPU VM reproduces Hugging Face transformers like the unfolded program does: prompt
// logits within 1e-4 relative error of the fp32 reference and the 32 greedy tokens exactly, with
// several workers adding into h at once.
#include <catch2/catch.hpp>

#include <algorithm>

#include "golden_session.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"
#include "vm/session.h"

using namespace amk;

TEST_CASE("session: the tiny llama with the MLP fold matches transformers (fp32 logits, 32 tokens)", "[vm][golden][fold]") {
  const auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  ir::ScheduleConfig c;
  for (const auto& g : schedule::fusion_all_groups())
    if (std::find(g.begin(), g.end(), "gate_proj") == g.end() && std::find(g.begin(), g.end(), "down_proj") == g.end())
      c.fusion_grouping.push_back(g);
  c.fusion_grouping.push_back({"rmsnorm", "gate_proj", "up_proj", "silu_mul", "down_proj", "residual_add"});
  c.tiling["gate_proj"]["N_tile"] = 32;  // 8 fold tasks per layer add into h at once
  auto program = schedule::lower(*model, c, *targets::target_find("cpu"),
                                 schedule::LowerOptions{256, ir::DType::F32, ir::DType::BF16});
  INFO(program.status().message());
  REQUIRE(program.is_ok());

  const testing::Golden g = testing::load_golden();
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cpu;
  o.threads = 4;
  auto session = Session::create(*program, o);
  INFO(session.status().message());
  REQUIRE(session.is_ok());
  CHECK_FALSE((*session)->bit_reproducible());
  const int32_t next = testing::check_prompt(**session, g, g.logits_f32, 1e-4);
  CHECK(testing::continue_greedy(**session, next, g.tokens_f32.size()) == g.tokens_f32);
}
