// tests/schedule/rope_qkv_lower_test.cpp: rope in the q / k GEMVs (docs/ROPE_IN_GEMV.md) in the
// lowering: the {rmsnorm, q_proj, k_proj, v_proj, rope, kv_append} group gives each layer q / k / v
// tiles that rotate (W_q, W_k in rope-pair order) and store k / v into the caches, a plain
// ATTENTION_TILE stage and no append tasks; the groups it replaces are refused beside it; the
// gpu-decode preset takes it by default (rope_in_qkv; AMK_ROPE_IN_QKV=0 / 1 overrides), and the
// programs pass validate().
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "tests/env_guard.h"

using namespace amk;
using Catch::Matchers::Contains;

namespace {

schedule::ModelConfig llama_1b() {
  auto m = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(m.is_ok());
  return *m;
}

ir::ScheduleConfig preset_config(const schedule::ModelConfig& m, int64_t max_seq, bool rope_in_qkv,
                                 schedule::AttentionInOProj attention = schedule::AttentionInOProj::Off) {
  schedule::DecodePreset preset;
  preset.rope_in_qkv = rope_in_qkv;
  preset.attention_in_o_proj = attention;
  auto c = schedule::schedule_config_from_json_text(schedule::decode_preset_json(m, *targets::target_find("h200"), max_seq, preset), "preset");
  INFO(c.status().message());
  REQUIRE(c.is_ok());
  return *c;
}

ir::Program lower_ok(const schedule::ModelConfig& m, const ir::ScheduleConfig& c, int64_t max_seq) {
  auto p = schedule::lower(m, c, *targets::target_find("h200"), schedule::LowerOptions{max_seq, ir::DType::BF16, std::nullopt});
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

std::string recipe(const ir::Task& t) { return t.params.get_string("recipe").value_or(""); }

const ir::Buffer& buffer(const ir::Program& p, ir::BufferId id) {
  for (const ir::Buffer& b : p.buffers)
    if (b.id == id) return b;
  FAIL("no buffer " << id.value);
  return p.buffers.front();
}

}  // namespace

TEST_CASE("rope in qkv: the 1B preset's layers rotate in the q / k tiles, append in the k / v tiles",
          "[schedule][rope]") {
  const schedule::ModelConfig m = llama_1b();
  for (int64_t max_seq : {256, 8192}) {  // one KV partition, and split-KV with its combine
    INFO("max_seq " << max_seq);
    const ir::Program p = lower_ok(m, preset_config(m, max_seq, true), max_seq);
    const ir::Program today = lower_ok(m, preset_config(m, max_seq, false), max_seq);
    const ir::ValidationResult v = ir::validate(p);
    INFO(v.report());
    REQUIRE(v.ok);
    size_t q = 0, k = 0, vv = 0, attention = 0, today_attention = 0;
    for (const ir::Task& t : p.tasks) {
      const std::string r = recipe(t);
      CHECK(t.op != ir::Opcode::KvAppend);
      CHECK(t.op != ir::Opcode::Rope);
      CHECK(r != "ROPE_APPEND");
      CHECK(r != "ROPE_ATTENTION");
      const bool qkv_tile = t.label.find(".q_proj[") != std::string::npos ||
                            t.label.find(".k_proj[") != std::string::npos || t.label.find(".v_proj[") != std::string::npos;
      if (qkv_tile) CHECK(r.rfind("RMSNORM_GEMV_", 0) == 0);  // every q / k / v tile is a step-position GEMV
      if (r == "RMSNORM_GEMV_ROPE") ++q;
      if (r == "RMSNORM_GEMV_ROPE_APPEND") ++k;
      if (r == "RMSNORM_GEMV_APPEND") ++vv;
      if (r.rfind("RMSNORM_GEMV_ROPE", 0) == 0) {  // whole pairs, W in pair order for this head_dim
        CHECK(*t.params.get_int("n_off") % 2 == 0);
        CHECK(*t.params.get_int("N_tile") % 2 == 0);
        CHECK(buffer(p, t.inputs[2]).rope_pairs == m.head_dim);
      }
      if (r == "RMSNORM_GEMV_APPEND" || r == "RMSNORM_GEMV_ROPE_APPEND")
        CHECK(buffer(p, t.outputs[0]).kind == ir::BufferKind::KvCache);
      if (t.op == ir::Opcode::AttentionTile) ++attention;
    }
    for (const ir::Task& t : today.tasks)
      if (recipe(t) == "ROPE_ATTENTION") ++today_attention;
    CHECK(q > 0);
    CHECK(k > 0);
    CHECK(vv > 0);
    CHECK(attention == today_attention);  // the same attention tasks, without their prologue
    // The appends' tasks are gone: fewer tasks, and no stage of appends.
    CHECK(p.tasks.size() < today.tasks.size());
  }
}

TEST_CASE("rope in qkv: the groups it replaces are refused beside it, naming the group", "[schedule][rope]") {
  const auto group = schedule::rope_qkv_group();
  for (const std::vector<std::string>& other : std::vector<std::vector<std::string>>{
           {"rmsnorm", "q_proj", "k_proj", "v_proj"},
           {"rope", "kv_append"},
           {"rope", "attention"},
           schedule::attention_o_proj_group()}) {
    auto plan = schedule::fusion_plan({group, other});
    REQUIRE_FALSE(plan.is_ok());
    CHECK(plan.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(plan.status().message(), Contains("fusion_grouping[1]") && Contains("already fused by fusion_grouping[0]"));
  }
  auto alone = schedule::fusion_plan({group});
  REQUIRE(alone.is_ok());
  CHECK(alone->rope_qkv);
  CHECK(alone->attn_norm_qkv);
}

TEST_CASE("rope in qkv: the preset takes the group by default, AMK_ROPE_IN_QKV overrides, the attention in o_proj wins",
          "[schedule][rope]") {
  const schedule::ModelConfig m = llama_1b();
  const auto has = [](const ir::ScheduleConfig& c, std::vector<std::string> g) {
    std::sort(g.begin(), g.end());
    for (auto h : c.fusion_grouping) {
      std::sort(h.begin(), h.end());
      if (h == g) return true;
    }
    return false;
  };
  {
    const testing::EnvGuard unset(schedule::kRopeInQkvEnv, nullptr);
    CHECK(schedule::DecodePreset{}.rope_in_qkv);
    CHECK(schedule::decode_preset_rope_in_qkv(schedule::DecodePreset{}, m, 256));
    schedule::DecodePreset off;
    off.rope_in_qkv = false;
    CHECK_FALSE(schedule::decode_preset_rope_in_qkv(off, m, 256));
    // The variable overrides the knob either way; any other value leaves it.
    for (const char* value : {"0", "1", "", "yes"}) {
      INFO("AMK_ROPE_IN_QKV=" << value);
      const testing::EnvGuard env(schedule::kRopeInQkvEnv, value);
      const std::string v = value;
      CHECK(schedule::decode_preset_rope_in_qkv(schedule::DecodePreset{}, m, 256) == (v != "0"));
      CHECK(schedule::decode_preset_rope_in_qkv(off, m, 256) == (v == "1"));
    }
  }
  const testing::EnvGuard unset(schedule::kRopeInQkvEnv, nullptr);
  const ir::ScheduleConfig on = preset_config(m, 256, true);
  CHECK(has(on, schedule::rope_qkv_group()));
  CHECK_FALSE(has(on, {"rope", "attention"}));
  CHECK_FALSE(has(on, {"rope", "kv_append"}));
  CHECK_FALSE(has(on, {"rmsnorm", "q_proj", "k_proj", "v_proj"}));
  const ir::ScheduleConfig off = preset_config(m, 256, false);
  CHECK_FALSE(has(off, schedule::rope_qkv_group()));
  CHECK(has(off, {"rope", "attention"}));
  const ir::ScheduleConfig both = preset_config(m, 256, true, schedule::AttentionInOProj::On);
  CHECK_FALSE(has(both, schedule::rope_qkv_group()));
  CHECK(has(both, schedule::attention_o_proj_group()));
}
