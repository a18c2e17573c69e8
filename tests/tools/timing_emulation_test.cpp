// tests/tools/timing_emulation_test.cpp: amk-bench's timing emulations (tools/bench/timing_emulation.h)
// on lowered Llama-1B programs: the rewritten program must still validate (the GPU VM runs only
// validated programs, and an emulation that deadlocked would measure nothing), hold no attention
// task, and start o_proj exactly where the attention tasks started: on their own waits.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ir/opspec.h"
#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "tools/bench/timing_emulation.h"

using namespace amk;

namespace {

ir::Program lowered_1b(int64_t max_seq) {
  auto model = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(model.is_ok());
  const ir::GpuTarget target = *targets::target_find("h200");
  auto cfg = schedule::schedule_config_from_json_text(
      schedule::decode_preset_json(*model, target, max_seq, schedule::DecodePreset{}), "preset");
  REQUIRE(cfg.is_ok());
  auto p = schedule::lower(*model, *cfg, target, schedule::LowerOptions{max_seq, ir::DType::BF16, std::nullopt});
  REQUIRE(p.is_ok());
  return std::move(*p);
}

bool attention(const ir::Task& t) {
  if (t.op == ir::Opcode::AttentionTile || t.op == ir::Opcode::AttentionCombine) return true;
  const auto r = t.params.get_string("recipe");
  return t.op == ir::Opcode::Fused && r && *r == "ROPE_ATTENTION";
}

}  // namespace

TEST_CASE("timing emulation: the attention stage removed, o_proj waits on what attention waited on", "[tools]") {
  // max_seq 256: one partition (ROPE_ATTENTION tasks alone); 8192: split-KV partials and combines.
  for (const int64_t max_seq : {int64_t{256}, int64_t{8192}}) {
    INFO("max_seq " << max_seq);
    ir::Program p = lowered_1b(max_seq);
    // Before: per counter, what its attention producers waited on, and which tasks waited on it.
    std::map<int32_t, std::set<std::pair<int32_t, int64_t>>> attn_waits;
    std::set<int32_t> attn_counters;
    int attn_tasks = 0;
    for (const ir::Task& t : p.tasks)
      if (attention(t)) {
        ++attn_tasks;
        attn_counters.insert(t.out_counter.value);
        for (const ir::Wait& w : t.waits) attn_waits[t.out_counter.value].insert({w.counter.value, w.threshold});
      }
    REQUIRE(attn_tasks >= 16 * 32 / 4);  // 16 layers x 32 query heads, four heads a task at most
    // Counters the attention tasks share with tasks that stay (the KV appends after split-KV
    // partials): waits on them keep what those others add.
    std::map<int32_t, int64_t> kept_producers;
    for (const ir::Task& t : p.tasks)
      if (!attention(t) && attn_counters.count(t.out_counter.value) != 0) ++kept_producers[t.out_counter.value];
    std::map<std::string, std::vector<ir::Wait>> o_waits_before;
    for (const ir::Task& t : p.tasks)
      if (t.label.find("o_proj") != std::string::npos) o_waits_before[t.label] = t.waits;
    REQUIRE_FALSE(o_waits_before.empty());
    const size_t before = p.tasks.size();

    int removed = 0;
    const Status st = bench::emulate_without_attention(p, &removed);
    INFO(st.message());
    REQUIRE(st.is_ok());
    CHECK(removed == attn_tasks);
    CHECK(p.tasks.size() == before - static_cast<size_t>(removed));
    CHECK_FALSE(p.pages.has_value());
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      CHECK(p.tasks[i].id.value == static_cast<int32_t>(i));
      CHECK_FALSE(attention(p.tasks[i]));
      for (const ir::Wait& w : p.tasks[i].waits) {
        if (attn_counters.count(w.counter.value) == 0) continue;
        REQUIRE(kept_producers.count(w.counter.value) == 1);
        CHECK(w.threshold == kept_producers[w.counter.value]);
      }
    }
    // o_proj now waits on what the attention tasks waited on (q / k / v's counter, at its count),
    // and on no attention counter; every threshold is positive. The validator below then proves
    // the thresholds reachable and the program race-free.
    std::set<std::pair<int32_t, int64_t>> qkv;  // the attention partials' waits (those not on attention counters)
    for (const auto& [c, waits] : attn_waits)
      for (const auto& w : waits)
        if (attn_counters.count(w.first) == 0) qkv.insert(w);
    REQUIRE_FALSE(qkv.empty());
    int o_seen = 0;
    for (const ir::Task& t : p.tasks) {
      if (o_waits_before.count(t.label) == 0) continue;
      ++o_seen;
      int on_qkv = 0;
      for (const ir::Wait& w : t.waits) {
        CHECK(w.threshold > 0);
        on_qkv += static_cast<int>(qkv.count({w.counter.value, w.threshold}));
      }
      CHECK(on_qkv == 1);  // its layer's q / k / v counter, exactly once
    }
    CHECK(o_seen == static_cast<int>(o_waits_before.size()));
    if (max_seq == 256) {  // one partition, no shared counter: o_proj keeps its number of waits
      CHECK(kept_producers.empty());
      for (const ir::Task& t : p.tasks) {
        auto it = o_waits_before.find(t.label);
        if (it == o_waits_before.end()) continue;
        CHECK(t.waits.size() == it->second.size());
      }
    }
    const ir::ValidationResult v = ir::validate(p);
    INFO(v.report());
    CHECK(v.ok);
  }
}

TEST_CASE("timing emulation: a program without attention is refused, AMK_EMU_NO_ATTENTION unset changes nothing",
          "[tools]") {
  ir::Program p = lowered_1b(256);
  std::string what = "x";
  ::unsetenv("AMK_EMU_NO_ATTENTION");
  const size_t n = p.tasks.size();
  REQUIRE(bench::apply_env_timing_emulation(p, &what).is_ok());
  CHECK(what.empty());
  CHECK(p.tasks.size() == n);
  ::setenv("AMK_EMU_NO_ATTENTION", "1", 1);
  REQUIRE(bench::apply_env_timing_emulation(p, &what).is_ok());
  ::unsetenv("AMK_EMU_NO_ATTENTION");
  CHECK(what.find("attention tasks removed") != std::string::npos);
  CHECK(p.tasks.size() < n);
  int removed = -1;
  const std::vector<ir::Task> tasks = p.tasks;
  const Status again = bench::emulate_without_attention(p, &removed);
  CHECK(again.code() == StatusCode::InvalidArgument);
  CHECK(removed == 0);
  // A refusal leaves the program as it was.
  REQUIRE(p.tasks.size() == tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    CHECK(p.tasks[i].id == tasks[i].id);
    CHECK(p.tasks[i].label == tasks[i].label);
    CHECK(p.tasks[i].waits == tasks[i].waits);
  }
}
