// tests/schedule/attention_o_proj_lower_test.cpp: the attention inside o_proj (docs/ATTENTION_IN_O.md)
// in the lowering: the {rope, attention, o_proj, residual_add} group turns each layer's o_proj
// tiles into FUSED ATTENTION_GEMV_ADD tasks that wait on q / k / v directly, the combinations it
// cannot lower are refused naming the knob, and the gpu-decode preset's attention_in_o_proj knob
// (auto: off unless AMK_ATTENTION_IN_O=1, then only for short head_dim-64 16-bit caches).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/opspec.h"
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

const std::string kSrc = AMK_SOURCE_DIR;
const std::vector<std::string> kGroup = {"rope", "attention", "o_proj", "residual_add"};
// STEP_POS | STEP_KV | recipe 9 in bits 16-31, as ROPE_ATTENTION's 393228 is 6 << 16 | 12.
constexpr int64_t kFlags = 4 | 8 | (int64_t{9} << 16);

const schedule::ModelConfig& model(const std::string& file) {
  static std::map<std::string, schedule::ModelConfig> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    auto m = schedule::model_config_load(kSrc + "/tests/fixtures/" + file);
    REQUIRE(m.is_ok());
    it = cache.emplace(file, *m).first;
  }
  return it->second;
}
const schedule::ModelConfig& llama_1b() { return model("configs/llama-3.2-1b.json"); }
const schedule::ModelConfig& llama_8b() { return model("configs/llama-3-8b.json"); }
const schedule::ModelConfig& tiny() { return model("tiny_llama/config.json"); }

/// AMK_ATTENTION_IN_O set (or, with nullptr, unset) for one scope.
struct EnvGuard : testing::EnvGuard {
  explicit EnvGuard(const char* value) : testing::EnvGuard(schedule::kAttentionInOEnv, value) {}
};

nlohmann::json preset_json(const schedule::ModelConfig& m, int64_t max_seq, const schedule::DecodePreset& preset,
                           ir::DType dtype = ir::DType::BF16) {
  return nlohmann::json::parse(schedule::decode_preset_json(m, *targets::target_find("h200"), max_seq, preset, dtype));
}

// The preset with the attention in o_proj as `mode` says and the rope in the attention tasks, so
// that "off" is the schedule whose attention stage and o_proj stage the group replaces.
ir::ScheduleConfig preset_config(const schedule::ModelConfig& m, int64_t max_seq, schedule::AttentionInOProj mode) {
  schedule::DecodePreset preset;
  preset.attention_in_o_proj = mode;
  preset.rope_in_qkv = false;
  auto c = schedule::schedule_config_from_json_text(schedule::decode_preset_json(m, *targets::target_find("h200"), max_seq, preset), "preset");
  INFO(c.status().message());
  REQUIRE(c.is_ok());
  return *c;
}

bool has_group(const nlohmann::json& preset, std::vector<std::string> group) {
  std::sort(group.begin(), group.end());
  for (const auto& g : preset["fusion_grouping"]) {
    auto ops = g.get<std::vector<std::string>>();
    std::sort(ops.begin(), ops.end());
    if (ops == group) return true;
  }
  return false;
}

Result<ir::Program> lower(const schedule::ModelConfig& m, const ir::ScheduleConfig& c, int64_t max_seq,
                          ir::DType dtype = ir::DType::BF16) {
  return schedule::lower(m, c, *targets::target_find("h200"), schedule::LowerOptions{max_seq, dtype, std::nullopt});
}

ir::Program lower_ok(const schedule::ModelConfig& m, const ir::ScheduleConfig& c, int64_t max_seq) {
  auto p = lower(m, c, max_seq);
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

std::string buffer_name(const ir::Program& p, ir::BufferId id) {
  for (const ir::Buffer& b : p.buffers)
    if (b.id == id) return b.name;
  return "?";
}

std::vector<std::string> input_names(const ir::Program& p, const ir::Task& t) {
  std::vector<std::string> names;
  for (const ir::BufferId b : t.inputs) names.push_back(buffer_name(p, b));
  return names;
}

bool is_recipe(const ir::Task& t, const char* recipe) {
  return t.op == ir::Opcode::Fused && t.params.get_string("recipe") == std::string(recipe);
}

size_t count_tasks(const ir::Program& p, const std::function<bool(const ir::Task&)>& f) {
  return static_cast<size_t>(std::count_if(p.tasks.begin(), p.tasks.end(), f));
}

bool label_starts(const ir::Task& t, const std::string& prefix) { return t.label.rfind(prefix, 0) == 0; }

void require_accepted(const ir::Program& p) {
  const ir::ValidationResult v = ir::validate(p);
  INFO(v.report());
  REQUIRE(v.ok);
}

}  // namespace

TEST_CASE("attention in o_proj: each 1B layer's o_proj tiles are ATTENTION_GEMV_ADD waiting on q / k / v",
          "[schedule][attention_o]") {
  const schedule::ModelConfig& m = llama_1b();
  const ir::Program p = lower_ok(m, preset_config(m, 256, schedule::AttentionInOProj::On), 256);
  const ir::Program today = lower_ok(m, preset_config(m, 256, schedule::AttentionInOProj::Off), 256);

  // Nothing of the attention stage is left: no attention task, no attention output buffer.
  CHECK(count_tasks(p, [](const ir::Task& t) { return is_recipe(t, "ROPE_ATTENTION"); }) == 0);
  CHECK(count_tasks(p, [](const ir::Task& t) { return t.op == ir::Opcode::AttentionTile; }) == 0);
  CHECK(count_tasks(p, [](const ir::Task& t) { return t.op == ir::Opcode::AttentionCombine; }) == 0);
  CHECK(count_tasks(p, [](const ir::Task& t) { return is_recipe(t, "GEMV_ADD"); }) == 0);
  CHECK(std::none_of(p.buffers.begin(), p.buffers.end(), [](const ir::Buffer& b) { return b.name == "L0.attn"; }));
  // Today's program less its 32 attention tasks a layer, and one stage a layer fewer.
  const int64_t layers = m.num_hidden_layers, heads = m.num_attention_heads, hd = m.head_dim;
  CHECK(count_tasks(today, [](const ir::Task& t) { return is_recipe(t, "ROPE_ATTENTION"); }) ==
        static_cast<size_t>(layers * heads));
  CHECK(p.tasks.size() == today.tasks.size() - static_cast<size_t>(layers * heads));
  CHECK(p.counters.size() == today.counters.size() - static_cast<size_t>(layers));

  for (int64_t layer = 0; layer < layers; ++layer) {
    const std::string P = "L" + std::to_string(layer);
    INFO(P);
    std::optional<int32_t> qkv_counter, o_counter;
    int64_t qkv_tasks = 0, o_tasks = 0;
    std::vector<std::pair<int64_t, int64_t>> tiles;  // (n_off, N_tile)
    for (const ir::Task& t : p.tasks) {
      const bool qkv = label_starts(t, P + ".q_proj[") || label_starts(t, P + ".k_proj[") || label_starts(t, P + ".v_proj[");
      if (qkv) {
        ++qkv_tasks;
        qkv_counter = t.out_counter.value;
      }
    }
    REQUIRE(qkv_counter);
    for (const ir::Task& t : p.tasks) {
      if (!label_starts(t, P + ".o_proj[")) continue;
      ++o_tasks;
      CHECK(is_recipe(t, "ATTENTION_GEMV_ADD"));
      CHECK(input_names(p, t) == std::vector<std::string>{P + ".q", P + ".k_cache", P + ".v_cache", P + ".k", P + ".v",
                                                          "rope_inv_freq", P + ".o_proj", "h"});
      REQUIRE(t.outputs.size() == 1);
      CHECK(buffer_name(p, t.outputs[0]) == "h");
      CHECK(t.params.get_int("head_dim") == hd);
      CHECK(t.params.get_int("kv_start") == 0);
      CHECK(t.params.get_int("kv_len") == 256);
      CHECK(t.params.get_real("scale") == Approx(0.125));
      CHECK(t.params.get_int("n_heads") == heads);
      CHECK(t.params.get_int("n_kv_heads") == m.num_key_value_heads);
      CHECK(t.params.get_int("pos") == 0);
      CHECK(t.params.get_int("K") == heads * hd);
      CHECK(t.params.get_int("flags") == kFlags);
      CHECK_FALSE(t.params.has("m_off"));
      tiles.emplace_back(*t.params.get_int("n_off"), *t.params.get_int("N_tile"));
      // It waits on q / k / v itself: the attention stage's counter is gone.
      REQUIRE(t.waits.size() == 1);
      CHECK(t.waits[0].counter.value == *qkv_counter);
      CHECK(t.waits[0].threshold == qkv_tasks);
      o_counter = t.out_counter.value;
      // Honest cost: the whole K / V window and the W_o tile rows, both bf16.
      const int64_t kv_window = 2 * m.num_key_value_heads * 256 * hd * 2;
      CHECK(t.est_bytes >= kv_window + *t.params.get_int("N_tile") * heads * hd * 2);
      CHECK(t.est_flops >= heads * 256 * 4 * hd + 2 * heads * hd * *t.params.get_int("N_tile"));
    }
    // The preset's 16-row tiles cover the 2048 columns of h exactly.
    CHECK(o_tasks == 128);
    std::sort(tiles.begin(), tiles.end());
    int64_t next = 0;
    for (const auto& [off, len] : tiles) {
      CHECK(off == next);
      CHECK(len == 16);
      next = off + len;
    }
    CHECK(next == m.hidden_size);
    REQUIRE(o_counter);
    // The appends run beside the fused tiles: the same wait, the same counter.
    int64_t appends = 0;
    for (const ir::Task& t : p.tasks) {
      if (t.label != P + ".rope_append_k" && t.label != P + ".kv_append_v") continue;
      ++appends;
      REQUIRE(t.waits.size() == 1);
      CHECK(t.waits[0].counter.value == *qkv_counter);
      CHECK(t.waits[0].threshold == qkv_tasks);
      CHECK(t.out_counter.value == *o_counter);
    }
    CHECK(appends == 2);
    // gate / up wait for all of them.
    for (const ir::Task& t : p.tasks) {
      if (!label_starts(t, P + ".gate_proj[") && !label_starts(t, P + ".up_proj[")) continue;
      REQUIRE(t.waits.size() == 1);
      CHECK(t.waits[0].counter.value == *o_counter);
      CHECK(t.waits[0].threshold == o_tasks + appends);
    }
    CHECK(p.counters.at(static_cast<size_t>(*o_counter)).note == P + " attention_o_proj");
  }
}

TEST_CASE("attention in o_proj: the 1B program is ACCEPTED by the validator", "[schedule][attention_o]") {
  const schedule::ModelConfig& m = llama_1b();
  require_accepted(lower_ok(m, preset_config(m, 256, schedule::AttentionInOProj::On), 256));
}

TEST_CASE("attention in o_proj: the group alone implies the rope-attention and residual forms",
          "[schedule][attention_o]") {
  // Without {rope, kv_append}: k is rotated by ROPE beside the fused tiles and appended a stage later.
  ir::ScheduleConfig c;
  c.fusion_grouping = {kGroup};
  const ir::Program p = lower_ok(tiny(), c, 256);
  const int64_t layers = tiny().num_hidden_layers;
  CHECK(count_tasks(p, [](const ir::Task& t) { return is_recipe(t, "ATTENTION_GEMV_ADD"); }) ==
        static_cast<size_t>(layers * 1));  // o_proj's default N_tile 256 = hidden: one tile a layer
  CHECK(count_tasks(p, [](const ir::Task& t) { return t.label.find("attn_residual") != std::string::npos; }) == 0);
  CHECK(count_tasks(p, [](const ir::Task& t) { return t.label.find("rope_q") != std::string::npos; }) == 0);
  CHECK(count_tasks(p, [](const ir::Task& t) { return t.op == ir::Opcode::Rope; }) == static_cast<size_t>(layers));
  for (const ir::Task& t : p.tasks) {
    if (!is_recipe(t, "ATTENTION_GEMV_ADD")) continue;
    CHECK(t.params.get_int("n_heads") == tiny().num_attention_heads);
    CHECK(t.params.get_int("K") == tiny().q_dim());
  }
  for (const ir::Counter& k : p.counters) {
    INFO(k.note);
    CHECK((k.note.find(" attention") == std::string::npos || k.note.find(" attention_o_proj") != std::string::npos));
  }
  require_accepted(p);
}

TEST_CASE("attention in o_proj: combinations the fused form cannot lower are refused naming the knob",
          "[schedule][attention_o]") {
  const auto error = [](const ir::ScheduleConfig& c) {
    auto p = lower(tiny(), c, 256);
    REQUIRE_FALSE(p.is_ok());
    CHECK(p.status().code() == StatusCode::InvalidArgument);
    return p.status().message();
  };
  ir::ScheduleConfig c;
  c.fusion_grouping = {kGroup};

  SECTION("split-KV: the partials and ATTENTION_COMBINE have no fused form") {
    c.tiling["attention"]["kv_partitions"] = 4;
    CHECK_THAT(error(c), Contains("tiling.attention.kv_partitions: 4 must be 1 with the fusion group"));
    c.tiling["attention"]["kv_partitions"] = 1;
    CHECK(lower(tiny(), c, 256).is_ok());
  }
  SECTION("head tiling: every fused task computes all heads") {
    c.tiling["attention"]["heads_per_task"] = 2;
    CHECK_THAT(error(c), Contains("tiling.attention.heads_per_task: 2 must be num_attention_heads (8)"));
    c.tiling["attention"]["heads_per_task"] = tiny().num_attention_heads;
    CHECK(lower(tiny(), c, 256).is_ok());
  }
  SECTION("the MLP fold: its o_proj tiles must also write a copy of h") {
    c.fusion_grouping.push_back(schedule::mlp_fold_group());
    CHECK_THAT(error(c), Contains("the MLP fold cannot run with the attention in o_proj"));
  }
  SECTION("the groups it replaces, given beside it") {
    c.fusion_grouping.push_back({"rope", "attention"});
    CHECK_THAT(error(c), Contains("fusion_grouping[1]: attention is already fused by fusion_grouping[0]"));
    c.fusion_grouping = {{"o_proj", "residual_add"}, kGroup};
    CHECK_THAT(error(c), Contains("fusion_grouping[1]: o_proj is already fused by fusion_grouping[0]"));
  }
}

TEST_CASE("the gpu-decode preset: attention_in_o_proj is off by default, on when asked",
          "[schedule][attention_o]") {
  using schedule::AttentionInOProj;
  const schedule::ModelConfig& m = llama_1b();
  const EnvGuard unset(nullptr);
  const schedule::DecodePreset defaults;
  CHECK(defaults.attention_in_o_proj == AttentionInOProj::Auto);
  CHECK(schedule::kAttentionInOProjMaxSeq == 256);

  // Auto without AMK_ATTENTION_IN_O: today's schedule, even for the shape the rule takes (the rope
  // in the q / k GEMVs by default; compared below with the rope in attention, the groups this one
  // replaces).
  CHECK(schedule::attention_in_o_proj_shape_ok(m, 256, ir::DType::BF16));
  CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(defaults, m, 256));
  const nlohmann::json today = preset_json(m, 256, defaults);
  CHECK_FALSE(has_group(today, kGroup));
  CHECK(has_group(today, schedule::rope_qkv_group()));
  schedule::DecodePreset rope_in_attention = defaults;
  rope_in_attention.rope_in_qkv = false;
  const nlohmann::json d = preset_json(m, 256, rope_in_attention);
  CHECK_FALSE(has_group(d, kGroup));
  CHECK(has_group(d, {"rope", "attention"}));
  CHECK(has_group(d, {"o_proj", "residual_add"}));
  CHECK(d["tiling"]["attention"]["heads_per_task"] == 1);

  // On: the group replaces the two it claims; one KV partition, every head in each task.
  schedule::DecodePreset on = rope_in_attention;
  on.attention_in_o_proj = AttentionInOProj::On;
  const nlohmann::json o = preset_json(m, 256, on);
  CHECK(has_group(o, kGroup));
  CHECK_FALSE(has_group(o, {"rope", "attention"}));
  CHECK_FALSE(has_group(o, {"o_proj", "residual_add"}));
  CHECK(has_group(o, {"rope", "kv_append"}));
  CHECK(o["fusion_grouping"].size() == d["fusion_grouping"].size() - 1);
  CHECK(o["tiling"]["attention"]["kv_partitions"] == 1);
  CHECK(o["tiling"]["attention"]["heads_per_task"] == 32);
  CHECK(o["tiling"]["o_proj"] == d["tiling"]["o_proj"]);
  on.rope_in_qkv = true;  // the attention in o_proj wins over the rope in the q / k GEMVs
  CHECK(preset_json(m, 256, on) == o);
  // Off, even with the variable set.
  const EnvGuard allowed("1");
  schedule::DecodePreset off = defaults;
  off.attention_in_o_proj = AttentionInOProj::Off;
  CHECK_FALSE(has_group(preset_json(m, 256, off), kGroup));

  CHECK(schedule::attention_in_o_proj_from_name("auto") == AttentionInOProj::Auto);
  CHECK(schedule::attention_in_o_proj_from_name("on") == AttentionInOProj::On);
  CHECK(schedule::attention_in_o_proj_from_name("off") == AttentionInOProj::Off);
  CHECK_FALSE(schedule::attention_in_o_proj_from_name("yes").has_value());
  for (const AttentionInOProj mode : {AttentionInOProj::Auto, AttentionInOProj::On, AttentionInOProj::Off})
    CHECK(schedule::attention_in_o_proj_from_name(schedule::attention_in_o_proj_name(mode)) == mode);
}

TEST_CASE("the gpu-decode preset: auto with AMK_ATTENTION_IN_O=1 takes only short head_dim-64 16-bit caches",
          "[schedule][attention_o]") {
  const schedule::ModelConfig& m = llama_1b();
  const schedule::DecodePreset autos;
  {
    const EnvGuard other("0");  // only "1" allows it
    CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(autos, m, 256));
  }
  const EnvGuard allowed("1");
  CHECK(schedule::decode_preset_attention_in_o_proj(autos, m, 256, ir::DType::BF16));
  CHECK(schedule::decode_preset_attention_in_o_proj(autos, m, 256, ir::DType::F16));
  CHECK(schedule::decode_preset_attention_in_o_proj(autos, m, 128));
  CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(autos, m, 256, ir::DType::F32));
  CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(autos, m, 257));
  // max_seq 8192: today's split-KV (16 partitions of the GQA group's 4 heads).
  const nlohmann::json long_cache = preset_json(m, 8192, autos);
  CHECK_FALSE(has_group(long_cache, kGroup));
  CHECK(long_cache["tiling"]["attention"]["kv_partitions"] == 16);
  CHECK(long_cache["tiling"]["attention"]["heads_per_task"] == 4);
  // head_dim 128 (Llama-3-8B): off.
  REQUIRE(llama_8b().head_dim == 128);
  CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(autos, llama_8b(), 256));
  CHECK_FALSE(has_group(preset_json(llama_8b(), 256, autos), kGroup));
  // Auto does not override what the preset was told about what the group replaces.
  for (const auto& tweak : std::vector<std::function<void(schedule::DecodePreset&)>>{
           [](schedule::DecodePreset& p) { p.mlp_fold = schedule::MlpFold::On; },
           [](schedule::DecodePreset& p) { p.drop_fusion = {"rope,attention"}; },
           [](schedule::DecodePreset& p) { p.drop_fusion = {"residual_add,o_proj"}; },
           [](schedule::DecodePreset& p) { p.kv_partitions = 2; },
           [](schedule::DecodePreset& p) { p.heads_per_task = 4; }}) {
    schedule::DecodePreset p = autos;
    tweak(p);
    CHECK_FALSE(schedule::decode_preset_attention_in_o_proj(p, m, 256));
  }
  // What auto turns on lowers: the preset's schedule is the one the knob "on" gives.
  const nlohmann::json a = preset_json(m, 256, autos);
  CHECK(has_group(a, kGroup));
  schedule::DecodePreset on = autos;
  on.attention_in_o_proj = schedule::AttentionInOProj::On;
  CHECK(a == preset_json(m, 256, on));
  CHECK(a["tiling"]["attention"]["kv_partitions"] == 1);
}
