// tests/vm/schedule_golden_test.cpp: programs lowered from the tiny Llama config under four
// different ScheduleConfigs (tiling, split-KV on/off and in stacked partials, fusion on/off (FUSED ROPE_ATTENTION with and
// without ROPE_APPEND), SM assignment, the argmax whole or in tiles) all reproduce
// the Hugging Face transformers fixture on the CPU VM: prompt logits within 1e-4 relative error
// (f32 activations over the bf16 checkpoint) and the 32 greedy tokens exactly.
#include <catch2/catch.hpp>

#include "golden_fixture.h"
#include "ir/validate.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"
#include "vm/session.h"

using namespace amk;

namespace {

struct Variant {
  const char* name;
  const char* target;
  ir::ScheduleConfig config;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  {
    Variant a{"default tiles, no split-KV, no fusion", "cpu", {}};
    v.push_back(a);
  }
  {
    Variant b{"N_tile 64, 4 KV partitions, every fusion, load_balance on h100", "h100", {}};
    b.config.tiling["gemv"]["N_tile"] = 64;
    b.config.tiling["attention"]["kv_partitions"] = 4;
    b.config.tiling["argmax"]["N_tile"] = 64;
    b.config.fusion_grouping = {{"rmsnorm", "q_proj", "k_proj", "v_proj"},
                                {"rmsnorm", "gate_proj", "up_proj"},
                                {"o_proj", "residual_add"},
                                {"silu_mul", "down_proj", "residual_add"},
                                {"final_norm", "lm_head", "argmax"},
                                {"rope", "kv_append"},
                                {"rope", "attention"}};
    v.push_back(b);
  }
  {
    Variant c{"uneven tiles, 3 partitions of 1 head, partial fusion, round_robin, linear pages", "h100", {}};
    c.config.tiling["gemv"]["N_tile"] = 100;
    c.config.tiling["lm_head"]["N_tile"] = 1000;
    c.config.tiling["argmax"]["N_tile"] = 100;  // uneven argmax tiles, then their combine
    c.config.tiling["attention"]["kv_partitions"] = 3;
    c.config.tiling["attention"]["heads_per_task"] = 1;
    // {rope, attention} without {rope, kv_append}: k's ROPE and both appends follow the attention.
    c.config.fusion_grouping = {{"o_proj", "residual_add"}, {"silu_mul", "down_proj"}, {"attention", "rope"}};
    c.config.sm_assignment = std::string("round_robin");
    c.config.page_allocation = "linear";
    v.push_back(c);
  }
  {
    // 16 partitions: ATTENTION_COMBINE's 8 operands each stack two partials (rows written by
    // m_off), merged in partition order; the window spreads over them as the tokens grow.
    Variant d{"16 KV partitions of 2 heads in stacked partials, every fusion, stage_balance on h100", "h100", {}};
    d.config.tiling["attention"]["kv_partitions"] = 16;
    d.config.tiling["attention"]["heads_per_task"] = 2;
    d.config.fusion_grouping = schedule::fusion_all_groups();
    v.push_back(d);
  }
  return v;
}

}  // namespace

TEST_CASE("schedule variants: four ScheduleConfigs reproduce transformers token-for-token", "[vm][golden][schedule]") {
  const testing::Golden g = testing::load_golden();
  auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  for (const Variant& v : variants()) {
    INFO("variant: " << v.name);
    auto target = targets::target_find(v.target);
    REQUIRE(target.is_ok());
    schedule::LowerOptions lo;
    lo.max_seq = 64;
    lo.dtype = ir::DType::F32;
    lo.weight_dtype = ir::DType::BF16;
    auto program = schedule::lower(*model, v.config, *target, lo);
    INFO(program.status().message());
    REQUIRE(program.is_ok());
    REQUIRE(ir::validate(*program).ok);

    SessionOptions o;
    o.weights_path = testing::fixture_dir() + "model.safetensors";
    o.backend = Backend::Cpu;
    o.threads = 2;
    auto session = Session::create(*program, o);
    INFO(session.status().message());
    REQUIRE(session.is_ok());
    Session& s = **session;
    int32_t next = -1;
    for (size_t i = 0; i < g.prompt.size(); ++i) {
      auto r = s.step(g.prompt[i]);
      REQUIRE(r.is_ok());
      const double err = testing::relative_error(r->logits, &g.logits_f32[i * static_cast<size_t>(g.vocab)], g.vocab);
      INFO("prompt position " << i << " relative error " << err);
      CHECK(err <= 1e-4);
      next = r->token;
    }
    std::vector<int32_t> generated{next};
    while (generated.size() < g.tokens_f32.size()) {
      auto r = s.step(generated.back());
      REQUIRE(r.is_ok());
      generated.push_back(r->token);
    }
    CHECK(generated == g.tokens_f32);
  }
}
