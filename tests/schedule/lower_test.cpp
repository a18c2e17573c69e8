// tests/schedule/lower_test.cpp: the decode-step lowering of the tiny Llama fixture: every point
// of a small knob grid validates, and each knob changes the program the way docs/SCHEDULE.md says.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "ir/graph.h"
#include "ir/json.h"
#include "ir/opspec.h"
#include "ir/validate.h"
#include "schedule/lower.h"
#include "targets/registry.h"

using namespace amk;
using Catch::Matchers::Contains;

namespace {

const std::string kSrc = AMK_SOURCE_DIR;

const schedule::ModelConfig& tiny() {
  static const schedule::ModelConfig m = *schedule::model_config_load(kSrc + "/tests/fixtures/tiny_llama/config.json");
  return m;
}

ir::GpuTarget target(const char* name) { return *targets::target_find(name); }

ir::Program lower_ok(const ir::ScheduleConfig& c, const ir::GpuTarget& t, ir::DType dtype = ir::DType::F32) {
  auto p = schedule::lower(tiny(), c, t, schedule::LowerOptions{256, dtype, std::nullopt});
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

void require_valid(const ir::Program& p) {
  const ir::ValidationResult v = ir::validate(p);
  INFO(v.report());
  REQUIRE(v.ok);
}

size_t count_op(const ir::Program& p, ir::Opcode op) {
  return static_cast<size_t>(std::count_if(p.tasks.begin(), p.tasks.end(), [&](const ir::Task& t) { return t.op == op; }));
}

size_t count_recipe(const ir::Program& p, const std::string& recipe) {
  return static_cast<size_t>(std::count_if(p.tasks.begin(), p.tasks.end(), [&](const ir::Task& t) {
    return t.op == ir::Opcode::Fused && t.params.get_string("recipe") == recipe;
  }));
}

Status lower_error(const ir::ScheduleConfig& c, const char* target_name = "h100") {
  return schedule::lower(tiny(), c, target(target_name), schedule::LowerOptions{256, ir::DType::F32, std::nullopt}).status();
}

}  // namespace

TEST_CASE("lower: every point of the knob grid validates", "[schedule]") {
  const ir::GpuTarget h100 = target("h100");
  int points = 0;
  for (int64_t n_tile : {64, 256})
    for (int64_t parts : {1, 4})
      for (bool fused : {false, true})
        for (const char* sm : {"round_robin", "load_balance", "stage_balance"})
          for (const char* pages : {"none", "linear", "graph_color"}) {
            ir::ScheduleConfig c;
            c.tiling["gemv"]["N_tile"] = n_tile;
            c.tiling["attention"]["kv_partitions"] = parts;
            if (fused) c.fusion_grouping = schedule::fusion_all_groups();
            c.sm_assignment = std::string(sm);
            c.page_allocation = pages;
            INFO("N_tile " << n_tile << ", kv_partitions " << parts << ", fused " << fused << ", " << sm << ", "
                           << pages);
            const ir::Program p = lower_ok(c, h100);
            require_valid(p);
            ++points;
          }
  CHECK(points == 72);
  // The dynamic backstop agrees on the extremes of the grid (randomized interleavings, page aware).
  ir::ScheduleConfig all;
  all.fusion_grouping = schedule::fusion_all_groups();
  all.tiling["attention"]["kv_partitions"] = 4;
  all.tiling["gemv"]["N_tile"] = 64;
  for (const ir::ScheduleConfig& c : {ir::ScheduleConfig{}, all}) {
    const std::vector<std::string> races = ir::simulate_adversarial(lower_ok(c, h100), 8);
    INFO((races.empty() ? std::string() : races.front()));
    CHECK(races.empty());
  }
  // The CPU target (num_sms 0) and both other dtypes as well.
  for (ir::DType d : {ir::DType::BF16, ir::DType::F16, ir::DType::F32}) require_valid(lower_ok({}, target("cpu"), d));
}

TEST_CASE("lower: program shape, decode section, sources and step flags", "[schedule]") {
  const ir::Program p = lower_ok({}, target("cpu"));
  const nlohmann::ordered_json& d = p.decode;
  const ir::Buffer& token = p.buffers.at(d["token_input"].get<size_t>());
  CHECK(token.kind == ir::BufferKind::IoInput);
  CHECK(token.dtype == ir::DType::I32);
  const ir::Buffer& logits = p.buffers.at(d["logits"].get<size_t>());
  CHECK(logits.kind == ir::BufferKind::IoOutput);
  CHECK(logits.dtype == ir::DType::F32);
  CHECK(logits.shape == std::vector<int64_t>{1024});
  CHECK(p.buffers.at(d["next_token"].get<size_t>()).dtype == ir::DType::I32);
  CHECK(d["max_seq"] == 256);
  CHECK(d["vocab"] == 1024);
  CHECK(p.meta["model"] == "tiny_llama");

  std::set<std::string> sources;
  for (const ir::Buffer& b : p.buffers) {
    if (b.kind == ir::BufferKind::Weight) sources.insert(*b.source);
    if (b.kind == ir::BufferKind::Const) CHECK(*b.source == "amk:rope_inv_freq?theta=10000&dim=32");
    if (b.kind == ir::BufferKind::KvCache) CHECK(b.shape == std::vector<int64_t>{256, 64});
  }
  CHECK(sources.size() == 4 * 9 + 3);  // per layer 2 norms + 7 projections; embed, final norm, lm_head
  CHECK(sources.count("model.layers.3.mlp.down_proj.weight") == 1);
  CHECK(sources.count("model.layers.0.self_attn.q_proj.weight") == 1);
  CHECK(sources.count("lm_head.weight") == 1);
  CHECK(sources.count("model.norm.weight") == 1);

  for (const ir::Task& t : p.tasks) {
    CHECK(t.est_bytes > 0);
    if (t.op == ir::Opcode::Rope || t.op == ir::Opcode::KvAppend) CHECK(t.params.int_or("flags", 0) == ir::kFlagStepPos);
    if (t.op == ir::Opcode::KvAppend) CHECK(t.outputs[0] == t.inputs[1]);
    if (t.op == ir::Opcode::AttentionTile) CHECK(t.params.int_or("flags", 0) == ir::kFlagStepKv);
    if (t.op == ir::Opcode::GemvTile) CHECK(t.est_flops == 2 * *t.params.get_int("K") * *t.params.get_int("N_tile"));
    CHECK_FALSE(t.sm.has_value());  // num_sms 0: the CPU VM places tasks itself
    // The stage chain: one all-join wait on the previous stage's counter.
    if (t.out_counter.value == 0) {
      CHECK(t.waits.empty());
    } else {
      REQUIRE(t.waits.size() == 1);
      CHECK(t.waits[0].counter.value == t.out_counter.value - 1);
    }
  }
  // Same inputs, same bytes.
  CHECK(ir::program_to_json(p) == ir::program_to_json(lower_ok({}, target("cpu"))));
}

TEST_CASE("lower: tiling covers every output exactly; per-projection N_tile overrides gemv", "[schedule]") {
  ir::ScheduleConfig c;
  c.tiling["gemv"]["N_tile"] = 96;
  c.tiling["q_proj"]["N_tile"] = 128;
  const ir::Program p = lower_ok(c, target("h100"));
  require_valid(p);
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> spans;  // projection label -> tiles
  for (const ir::Task& t : p.tasks) {
    if (t.op != ir::Opcode::GemvTile && t.op != ir::Opcode::Fused) continue;
    spans[t.label.substr(0, t.label.find('['))].push_back({*t.params.get_int("n_off"), *t.params.get_int("N_tile")});
  }
  CHECK(spans.at("L0.q_proj").size() == 2);   // 256 / 128
  CHECK(spans.at("L0.k_proj").size() == 1);   // 64 < 96
  CHECK(spans.at("L0.gate_proj").size() == 3);  // ceil(256 / 96): the last tile is 64 wide
  CHECK(spans.at("lm_head").size() == 11);    // ceil(1024 / 96): the last tile is 64 wide
  for (auto& [label, tiles] : spans) {
    std::sort(tiles.begin(), tiles.end());
    int64_t next = 0;
    for (const auto& [off, len] : tiles) {
      INFO(label);
      CHECK(off == next);
      next = off + len;
    }
    // q / o / gate / up / down all have 256 outputs (intermediate_size 256 in the fixture).
    const int64_t width = label == "lm_head" ? 1024
                          : (label.find("k_proj") != std::string::npos || label.find("v_proj") != std::string::npos) ? 64
                                                                                                                     : 256;
    CHECK(next == width);
  }
}

TEST_CASE("lower: fusion groups emit FUSED recipes and remove stages", "[schedule]") {
  const ir::GpuTarget h100 = target("h100");
  const ir::Program plain = lower_ok({}, h100);
  CHECK(count_op(plain, ir::Opcode::Fused) == 0);
  CHECK(count_op(plain, ir::Opcode::RmsNorm) == 4 * 2 + 1);
  CHECK(count_op(plain, ir::Opcode::Add) == 4 * 2);
  CHECK(count_op(plain, ir::Opcode::SiluMul) == 4);

  ir::ScheduleConfig all;
  all.fusion_grouping = schedule::fusion_all_groups();
  const ir::Program fused = lower_ok(all, h100);
  require_valid(fused);
  // N_tile 256 on the tiny model: per layer q, k, v, gate, up (intermediate 256), o, down 1 tile
  // each; LM head 4.
  CHECK(count_recipe(fused, "RMSNORM_GEMV") == 4 * (3 + 2) + 4);
  CHECK(count_recipe(fused, "GEMV_ADD") == 4);
  CHECK(count_recipe(fused, "SILU_MUL_GEMV_ADD") == 4);
  CHECK(count_op(fused, ir::Opcode::RmsNorm) == 0);
  CHECK(count_op(fused, ir::Opcode::Add) == 0);
  CHECK(count_op(fused, ir::Opcode::SiluMul) == 0);
  CHECK(count_op(fused, ir::Opcode::SampleArgmax) == 1);
  // ROPE_APPEND: k rotated into its cache, v keeps its KV_APPEND; ROPE_ATTENTION: every attention
  // task rotates its q heads, so no ROPE is left.
  CHECK(count_recipe(fused, "ROPE_APPEND") == 4);
  CHECK(count_op(fused, ir::Opcode::Rope) == 0);
  CHECK(count_op(fused, ir::Opcode::KvAppend) == 4);
  CHECK(count_op(fused, ir::Opcode::AttentionTile) == 0);
  CHECK(count_recipe(fused, "ROPE_ATTENTION") == count_op(plain, ir::Opcode::AttentionTile));
  CHECK(count_op(plain, ir::Opcode::Rope) == 4 * 2);
  CHECK(count_op(plain, ir::Opcode::KvAppend) == 4 * 2);
  // 12 stages per layer unfused, 5 fused; plus embed, final_norm, lm_head, argmax (final_norm fused away).
  CHECK(plain.counters.size() == 1 + 4 * 12 + 3);
  CHECK(fused.counters.size() == 1 + 4 * 5 + 2);
  // The appends run after the attention tasks that read the caches (they wait on the counter
  // those tasks signal, directly or through the o_proj stage's predecessor).
  for (const ir::Task& t : fused.tasks) {
    const bool append = t.op == ir::Opcode::KvAppend || t.params.get_string("recipe") == std::string("ROPE_APPEND");
    if (!append) continue;
    REQUIRE(t.waits.size() == 1);
    const ir::CounterId after = t.waits[0].counter;
    int64_t attention_signals = 0;
    for (const ir::Task& a : fused.tasks)
      if (a.params.get_string("recipe") == std::string("ROPE_ATTENTION") && a.out_counter == after) ++attention_signals;
    CHECK(attention_signals > 0);
  }
  for (const ir::Task& t : fused.tasks) {
    if (t.op != ir::Opcode::Fused) continue;
    const auto* r = ir::recipe_find(*t.params.get_string("recipe"));
    REQUIRE(r != nullptr);
    CHECK(t.params.int_or("flags", 0) >> ir::kFlagRecipeShift == static_cast<int64_t>(r->recipe));
    if (r->residual_input >= 0) CHECK(t.outputs[0] == t.inputs[static_cast<size_t>(r->residual_input)]);  // in place
    if (r->recipe == ir::FusedRecipe::RopeAppend) {
      CHECK(t.outputs[0] == t.inputs[2]);  // the cache, in place
      CHECK((t.params.int_or("flags", 0) & ir::kFlagStepPos) != 0);
    }
    if (r->recipe == ir::FusedRecipe::RopeAttention) {
      REQUIRE(t.inputs.size() == 6);
      const int64_t step = ir::kFlagStepPos | ir::kFlagStepKv;
      CHECK((t.params.int_or("flags", 0) & step) == step);
      const std::string& k_new = fused.buffers[static_cast<size_t>(t.inputs[3].value)].name;
      CHECK(k_new.substr(k_new.size() - 2) == ".k");  // the k projection's output, not yet rotated
    }
  }

  SECTION("rope + attention alone: k's ROPE and KV_APPEND run after the attention") {
    ir::ScheduleConfig c;
    c.fusion_grouping = {{"attention", "rope"}};
    const ir::Program p = lower_ok(c, h100);
    require_valid(p);
    CHECK(count_op(p, ir::Opcode::Rope) == 4);  // k only
    CHECK(count_op(p, ir::Opcode::KvAppend) == 4 * 2);
    CHECK(count_recipe(p, "ROPE_ATTENTION") == count_op(plain, ir::Opcode::AttentionTile));
    // The rope and kv_append stages of each layer are gone: their tasks join o_proj and attn_residual.
    CHECK(p.counters.size() == plain.counters.size() - 4 * 2);
  }

  SECTION("partial down-projection groups") {
    ir::ScheduleConfig c;
    c.fusion_grouping = {{"down_proj", "silu_mul"}};  // order inside a group does not matter
    const ir::Program p = lower_ok(c, h100);
    require_valid(p);
    CHECK(count_recipe(p, "SILU_MUL_GEMV") == 4);
    CHECK(count_op(p, ir::Opcode::SiluMul) == 0);
    CHECK(count_op(p, ir::Opcode::Add) == 8);
    c.fusion_grouping = {{"down_proj", "residual_add"}, {"final_norm", "lm_head"}};
    const ir::Program q = lower_ok(c, h100);
    require_valid(q);
    CHECK(count_recipe(q, "GEMV_ADD") == 4);
    CHECK(count_op(q, ir::Opcode::SiluMul) == 4);
    CHECK(count_recipe(q, "RMSNORM_GEMV") == 4);
  }
  SECTION("unknown or conflicting groups are refused by index") {
    ir::ScheduleConfig c;
    c.fusion_grouping = {{"o_proj", "residual_add"}, {"q_proj", "softmax"}};
    Status s = lower_error(c);
    CHECK(s.code() == StatusCode::InvalidArgument);
    CHECK_THAT(s.message(), Contains("fusion_grouping[1]") && Contains("softmax"));
    c.fusion_grouping = {{"silu_mul", "down_proj"}, {"down_proj", "residual_add"}};
    CHECK_THAT(lower_error(c).message(), Contains("fusion_grouping[1]") && Contains("down_proj"));
  }
}

TEST_CASE("lower: split-KV partitions and head groups", "[schedule]") {
  ir::ScheduleConfig c;
  c.tiling["attention"]["kv_partitions"] = 4;
  c.tiling["attention"]["heads_per_task"] = 3;
  const ir::Program p = lower_ok(c, target("h100"));
  require_valid(p);
  CHECK(count_op(p, ir::Opcode::AttentionCombine) == 4 * 3);  // layers x head groups: one combine tile each
  CHECK(count_op(p, ir::Opcode::AttentionTile) == 4 * 4 * 3);  // layers x partitions x ceil(8 / 3)
  std::set<std::pair<int64_t, int64_t>> windows, combine_heads;
  for (const ir::Task& t : p.tasks) {
    if (t.op == ir::Opcode::AttentionCombine) {
      CHECK(t.inputs.size() == 4);
      combine_heads.insert({*t.params.get_int("n_off"), *t.params.get_int("N_tile")});
    }
    if (t.op != ir::Opcode::AttentionTile) continue;
    CHECK(t.params.int_or("flags", 0) == (ir::kFlagStepKv | ir::kFlagPartialWrite));
    CHECK(p.buffers[static_cast<size_t>(t.outputs[0].value)].dtype == ir::DType::F32);
    windows.insert({*t.params.get_int("kv_start"), *t.params.get_int("kv_len")});
    if (*t.params.get_int("n_off") == 6) CHECK(*t.params.get_int("N_tile") == 2);  // the narrower last group
  }
  CHECK(windows == std::set<std::pair<int64_t, int64_t>>{{0, 64}, {64, 64}, {128, 64}, {192, 64}});
  CHECK(combine_heads == std::set<std::pair<int64_t, int64_t>>{{0, 3}, {3, 3}, {6, 2}});  // the attention's head groups
  CHECK(count_op(lower_ok({}, target("h100")), ir::Opcode::AttentionCombine) == 0);

  // A cache that P does not divide: slices still cover it exactly and none is empty.
  c.tiling["attention"]["kv_partitions"] = 8;
  auto uneven = schedule::lower(tiny(), c, target("h100"), {10, ir::DType::F32, std::nullopt});
  REQUIRE(uneven.is_ok());
  require_valid(*uneven);
  std::set<std::pair<int64_t, int64_t>> slices;
  for (const ir::Task& t : uneven->tasks)
    if (t.op == ir::Opcode::AttentionTile) slices.insert({*t.params.get_int("kv_start"), *t.params.get_int("kv_len")});
  int64_t next = 0;
  for (const auto& [start, len] : slices) {
    CHECK(start == next);
    CHECK(len >= 1);
    next = start + len;
  }
  CHECK(next == 10);
  CHECK(slices.size() == 8);
  CHECK_THAT(schedule::lower(tiny(), c, target("h100"), {4, ir::DType::F32, std::nullopt}).status().message(),
             Contains("tiling.attention.kv_partitions") && Contains("max_seq 4"));

  c.tiling["attention"]["kv_partitions"] = 9;  // more than 8 operands, and 8 does not divide it
  CHECK_THAT(lower_error(c).message(), Contains("tiling.attention.kv_partitions 9") && Contains("multiple of it"));
  c.tiling["attention"]["kv_partitions"] = 17;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.attention.kv_partitions") && Contains("merges <= 16"));
}

TEST_CASE("lower: 16 KV partitions stack two partials per combine operand", "[schedule]") {
  ir::ScheduleConfig c;
  c.tiling["attention"]["kv_partitions"] = 16;
  c.tiling["attention"]["heads_per_task"] = 2;
  c.fusion_grouping = schedule::fusion_all_groups();  // FUSED ROPE_ATTENTION writes the rows too
  const ir::Program p = lower_ok(c, target("h100"));
  require_valid(p);
  const schedule::ModelConfig& m = tiny();
  const int64_t row = m.num_attention_heads * (m.head_dim + 2);
  std::set<std::pair<int64_t, int64_t>> written;  // (partial buffer, row) of layer 0
  size_t combines = 0;
  for (const ir::Task& t : p.tasks) {
    if (t.op == ir::Opcode::AttentionCombine) {
      ++combines;
      REQUIRE(t.inputs.size() == 8);
      for (ir::BufferId b : t.inputs) CHECK(p.buffers[static_cast<size_t>(b.value)].shape == std::vector<int64_t>{2, row});
    }
    const bool attention = t.op == ir::Opcode::AttentionTile ||
                           (t.op == ir::Opcode::Fused && t.params.get_string("recipe") == std::string("ROPE_ATTENTION"));
    if (!attention || t.label.rfind("L0.", 0) != 0) continue;
    const int64_t kv_start = *t.params.get_int("kv_start");
    const int64_t part = kv_start / (256 / 16);
    CHECK(*t.params.get_int("m_off") == part / 8);  // partition p: row p / 8 of operand p % 8
    written.insert({t.outputs[0].value, *t.params.get_int("m_off")});
  }
  CHECK(combines == 4 * 8);    // layers x combine groups of heads_per_task / 2 rows = 1 head
  CHECK(written.size() == 16);  // every row of layer 0's eight stacked buffers, once per head group
  // The dynamic backstop sees the rows as disjoint writes too.
  const std::vector<std::string> races = ir::simulate_adversarial(p, 4);
  INFO((races.empty() ? std::string() : races.front()));
  CHECK(races.empty());
}

TEST_CASE("lower: the argmax in tiles writing candidates, then one combine", "[schedule]") {
  ir::ScheduleConfig c;
  c.tiling["argmax"]["N_tile"] = 300;
  const ir::Program p = lower_ok(c, target("h100"));
  require_valid(p);
  const int64_t vocab = tiny().vocab_size, tiles = (vocab + 299) / 300;
  REQUIRE(count_op(p, ir::Opcode::SampleArgmax) == static_cast<size_t>(tiles + 1));
  // The tiles cover the logits once, each into its own slot; the combine is the last task.
  int64_t next = 0, slot = 0;
  ir::BufferId candidates;
  for (const ir::Task& t : p.tasks) {
    if (t.op != ir::Opcode::SampleArgmax || t.inputs.size() != 1) continue;
    CHECK(*t.params.get_int("n_off") == next);
    CHECK(*t.params.get_int("m_off") == slot++);
    next += *t.params.get_int("N_tile");
    candidates = t.outputs[0];
  }
  CHECK(next == vocab);
  const ir::Buffer& cand = p.buffers[static_cast<size_t>(candidates.value)];
  CHECK(cand.dtype == ir::DType::I32);
  CHECK(cand.shape == std::vector<int64_t>{tiles});
  const ir::Task& combine = p.tasks.back();
  CHECK(combine.op == ir::Opcode::SampleArgmax);
  CHECK(combine.inputs.size() == 2);
  CHECK(combine.inputs[1] == candidates);
  CHECK(combine.outputs[0].value == p.decode["next_token"].get<int32_t>());
  // Two stages instead of one: the tiles wait for the LM head, the combine for every tile.
  CHECK(p.counters.size() == lower_ok({}, target("h100")).counters.size() + 1);
  CHECK(combine.waits.size() == 1);
  CHECK(combine.waits[0].threshold == tiles);

  c.tiling["argmax"]["N_tile"] = vocab;  // one tile is the whole scan
  CHECK(count_op(lower_ok(c, target("h100")), ir::Opcode::SampleArgmax) == 1);
  c.tiling["argmax"]["N_tile"] = 0;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.argmax.N_tile"));
  c.tiling["argmax"].clear();
  c.tiling["argmax"]["kv_partitions"] = 2;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.argmax.kv_partitions") && Contains("known for argmax: N_tile"));
}

TEST_CASE("lower: sm_assignment spreads tasks over the target's SMs", "[schedule]") {
  const ir::GpuTarget h100 = target("h100");
  ir::ScheduleConfig rr;
  rr.sm_assignment = std::string("round_robin");
  rr.tiling["gemv"]["N_tile"] = 64;
  const ir::Program p = lower_ok(rr, h100);
  for (size_t i = 0; i < p.tasks.size(); ++i) CHECK(*p.tasks[i].sm == static_cast<int32_t>(i % 132));

  ir::ScheduleConfig lb = rr;
  lb.sm_assignment = std::string("load_balance");
  const ir::Program q = lower_ok(lb, h100);
  std::vector<int64_t> load(132, 0);
  int64_t biggest = 0;
  for (const ir::Task& t : q.tasks) {
    load[static_cast<size_t>(*t.sm)] += t.est_bytes;
    biggest = std::max(biggest, t.est_bytes);
  }
  const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
  CHECK(*hi - *lo <= biggest);  // the greedy bound: no SM ends more than one task above another

  SECTION("an explicit map must list every task with an sm in range") {
    ir::ScheduleConfig ex = rr;
    std::map<int64_t, int64_t> map;
    for (const ir::Task& t : p.tasks) map[t.id.value] = (t.id.value * 7) % 132;
    ex.sm_assignment = map;
    const ir::Program e = lower_ok(ex, h100);
    require_valid(e);
    CHECK(*e.tasks[5].sm == 35);
    map.erase(3);
    ex.sm_assignment = map;
    CHECK_THAT(lower_error(ex).message(), Contains("sm_assignment") && Contains("task 3"));
    map[3] = 132;
    ex.sm_assignment = map;
    CHECK_THAT(lower_error(ex).message(), Contains("sm_assignment[\"3\"]") && Contains("132"));
    CHECK_THAT(lower_error(ex, "cpu").message(), Contains("num_sms 0"));
  }
}

namespace {

/// The largest spread of bytes between two SMs inside one stage (the tasks releasing one counter),
/// less that stage's largest task: > 0 where some SM carries more than one task's bytes above
/// another in the same stage.
int64_t worst_stage_excess(const ir::Program& p, int64_t num_sms) {
  std::map<int64_t, std::vector<int64_t>> bytes;
  std::map<int64_t, int64_t> biggest;
  for (const ir::Task& t : p.tasks) {
    std::vector<int64_t>& b = bytes[t.out_counter.value];
    b.resize(static_cast<size_t>(num_sms), 0);
    b[static_cast<size_t>(*t.sm)] += t.est_bytes;
    biggest[t.out_counter.value] = std::max(biggest[t.out_counter.value], t.est_bytes);
  }
  int64_t worst = std::numeric_limits<int64_t>::min();
  for (const auto& [c, b] : bytes) {
    const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
    worst = std::max(worst, *hi - *lo - biggest[c]);
  }
  return worst;
}

}  // namespace

TEST_CASE("lower: stage_balance evens every stage's bytes over the SMs", "[schedule]") {
  // Few SMs and small tiles, so every stage has more tasks than SMs and the whole-program balance
  // of load_balance carries one stage's deficit into the next.
  ir::GpuTarget t = target("h100");
  t.num_sms = 5;
  ir::ScheduleConfig c;
  c.fusion_grouping = schedule::fusion_all_groups();
  c.tiling["gemv"]["N_tile"] = 3;
  c.sm_assignment = std::string("stage_balance");
  const ir::Program sb = lower_ok(c, t);
  require_valid(sb);
  CHECK(worst_stage_excess(sb, t.num_sms) <= 0);
  c.sm_assignment = std::string("load_balance");
  const ir::Program lb = lower_ok(c, t);
  CHECK(worst_stage_excess(lb, t.num_sms) > 0);  // what stage_balance is for
  // The same tasks in the same order; only the SMs differ.
  REQUIRE(sb.tasks.size() == lb.tasks.size());
  for (size_t i = 0; i < sb.tasks.size(); ++i) CHECK(sb.tasks[i].label == lb.tasks[i].label);
  // Without SMs (the cpu target) it leaves sm unset, as the other policies do.
  c.sm_assignment = std::string("stage_balance");
  for (const ir::Task& task : lower_ok(c, target("cpu")).tasks) CHECK_FALSE(task.sm.has_value());
  c.sm_assignment = std::string("stage-balance");
  CHECK_THAT(lower_error(c).message(), Contains("stage-balance") && Contains("\"stage_balance\""));
}

TEST_CASE("lower: page_allocation none / linear / graph_color", "[schedule]") {
  const ir::GpuTarget h100 = target("h100");
  ir::ScheduleConfig c;
  c.page_allocation = "none";
  const ir::Program none = lower_ok(c, h100);
  CHECK_FALSE(none.pages.has_value());
  c.page_allocation = "linear";
  const ir::Program linear = lower_ok(c, h100);
  c.page_allocation = "graph_color";
  const ir::Program colored = lower_ok(c, h100);

  size_t activations = 0;
  for (const ir::Buffer& b : linear.buffers) activations += b.kind == ir::BufferKind::Activation;
  REQUIRE(linear.pages.has_value());
  CHECK(linear.pages->pages.size() == activations);
  CHECK(schedule::program_scratch_bytes(linear) == schedule::program_scratch_bytes(none));
  REQUIRE(colored.pages.has_value());
  CHECK(colored.pages->buffer_to_page.size() == activations);
  CHECK(colored.pages->pages.size() < linear.pages->pages.size() / 4);
  CHECK(schedule::program_scratch_bytes(colored) < schedule::program_scratch_bytes(linear) / 4);

  // Buffers sharing a page have strictly disjoint live stages, and every page fits its buffers.
  std::map<int32_t, std::pair<int64_t, int64_t>> live;  // buffer -> [first write stage, last use stage]
  for (const ir::Task& t : colored.tasks) {
    for (ir::BufferId b : t.outputs) {
      auto [it, fresh] = live.emplace(b.value, std::make_pair(t.out_counter.value, t.out_counter.value));
      if (!fresh) it->second.second = t.out_counter.value;
    }
    for (ir::BufferId b : t.inputs)
      if (live.count(b.value)) live[b.value].second = t.out_counter.value;
  }
  std::map<int32_t, std::vector<int32_t>> by_page;
  for (const auto& [b, pg] : colored.pages->buffer_to_page) {
    by_page[pg.value].push_back(b.value);
    CHECK(colored.pages->pages[static_cast<size_t>(pg.value)].nbytes >= colored.buffers[static_cast<size_t>(b.value)].nbytes());
  }
  for (const auto& [pg, bufs] : by_page)
    for (size_t i = 0; i < bufs.size(); ++i)
      for (size_t j = i + 1; j < bufs.size(); ++j) {
        const auto a = live.at(bufs[i]), b = live.at(bufs[j]);
        CHECK((a.second < b.first || b.second < a.first));
      }
}

TEST_CASE("lower: knobs outside their limits are refused naming the knob", "[schedule]") {
  ir::ScheduleConfig c;
  c.threads_per_block = 100;
  CHECK_THAT(lower_error(c).message(), Contains("threads_per_block") && Contains("32"));
  c.threads_per_block = 96;
  CHECK(lower_error(c).is_ok());
  CHECK_THAT(lower_error(c, "mi300x").message(), Contains("threads_per_block") && Contains("64"));
  c.threads_per_block = 2048;
  CHECK_THAT(lower_error(c).message(), Contains("1024"));
  c = {};
  c.smem_bytes_per_block = 232449;
  CHECK_THAT(lower_error(c).message(), Contains("smem_bytes_per_block") && Contains("232448"));
  c.smem_bytes_per_block = 1024;
  CHECK_THAT(lower_error(c, "cpu").message(), Contains("smem_bytes_per_block"));
  c = {};
  c.pipelining_depth = -1;
  CHECK_THAT(lower_error(c).message(), Contains("pipelining_depth"));
  c = {};
  c.page_allocation = "buddy";
  CHECK_THAT(lower_error(c).message(), Contains("page_allocation"));
  c = {};
  c.sm_assignment = std::string("random");
  CHECK_THAT(lower_error(c).message(), Contains("sm_assignment"));
  c = {};
  c.tiling["softmax"]["N_tile"] = 4;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.softmax"));
  c = {};
  c.tiling["gemv"]["N_tile"] = 0;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.gemv.N_tile"));
  c = {};
  c.tiling["gemv"]["M_tile"] = 4;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.gemv.M_tile"));
  c = {};
  c.tiling["attention"]["heads_per_task"] = 9;
  CHECK_THAT(lower_error(c).message(), Contains("tiling.attention.heads_per_task"));
  CHECK(lower_error({}).is_ok());
  CHECK_THAT(schedule::lower(tiny(), {}, target("h100"), {257, ir::DType::F32, std::nullopt}).status().message(),
             Contains("max_seq") && Contains("max_position_embeddings"));
  CHECK_THAT(schedule::lower(tiny(), {}, target("h100"), {0, ir::DType::I8, std::nullopt}).status().message(), Contains("dtype"));
}
