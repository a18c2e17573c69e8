// tests/vm/rope_qkv_golden_test.cpp: the bundled tiny Llama lowered with rope in the q / k GEMVs
// (docs/ROPE_IN_GEMV.md: W_q and W_k loaded in rope-pair order, q and k rotated in the tiles' fp32
// epilogue, k and v stored straight into the caches' row step.pos) and run on the CPU VM reproduces
// Hugging Face transformers as the default program does: prompt logits within 1e-4 relative error
// of the fp32 reference and the 32 greedy tokens exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "golden_session.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"
#include "vm/session.h"

using namespace amk;

namespace {

bool has(const std::vector<std::string>& g, const char* op) { return std::find(g.begin(), g.end(), op) != g.end(); }

// Every fusion group, with the rope-in-qkv group in place of the three it replaces (and with the
// MLP fold in place of the two MLP groups when `fold`).
ir::ScheduleConfig rope_qkv_config(bool fold) {
  ir::ScheduleConfig c;
  for (const auto& g : schedule::fusion_all_groups()) {
    const bool mlp = has(g, "gate_proj") || has(g, "down_proj");
    if (!has(g, "q_proj") && !has(g, "rope") && !(fold && mlp)) c.fusion_grouping.push_back(g);
  }
  c.fusion_grouping.push_back(schedule::rope_qkv_group());
  if (fold) c.fusion_grouping.push_back(schedule::mlp_fold_group());
  c.tiling["q_proj"]["N_tile"] = 24;  // tiles that end inside a head (head_dim 32)
  c.tiling["k_proj"]["N_tile"] = 16;
  c.tiling["v_proj"]["N_tile"] = 15;  // v is not rotated: any tile
  return c;
}

}  // namespace

TEST_CASE("session: the tiny llama with rope in the q / k GEMVs matches transformers (fp32 logits, 32 tokens)",
          "[vm][golden][rope]") {
  const auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  const bool fold = GENERATE(false, true);  // the fold kernel runs the recipes on CUDA too
  INFO((fold ? "with the MLP fold" : "without the MLP fold"));
  auto program = schedule::lower(*model, rope_qkv_config(fold), *targets::target_find("cpu"),
                                 schedule::LowerOptions{256, ir::DType::F32, ir::DType::BF16});
  INFO(program.status().message());
  REQUIRE(program.is_ok());
  // The lowering did what the group says: rotating tiles, no rope or append tasks.
  size_t rotating = 0, appends = 0;
  for (const ir::Task& t : program->tasks) {
    const auto r = t.params.get_string("recipe");
    if (r && (*r == "RMSNORM_GEMV_ROPE" || *r == "RMSNORM_GEMV_ROPE_APPEND")) ++rotating;
    if (t.op == ir::Opcode::KvAppend || t.op == ir::Opcode::Rope || (r && (*r == "ROPE_APPEND" || *r == "ROPE_ATTENTION")))
      ++appends;
  }
  CHECK(rotating > 0);
  CHECK(appends == 0);

  const testing::Golden g = testing::load_golden();
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cpu;
  o.threads = 4;
  auto session = Session::create(*program, o);
  INFO(session.status().message());
  REQUIRE(session.is_ok());
  const int32_t next = testing::check_prompt(**session, g, g.logits_f32, 1e-4);
  CHECK(testing::continue_greedy(**session, next, g.tokens_f32.size()) == g.tokens_f32);
}
