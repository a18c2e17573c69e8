// tests/schedule/fast_sms_test.cpp: wide tiles for the SMs that stream faster (docs/SM_BALANCE.md).
// The tiling's wide_tiles / wide_N_tile, the preset's fast_sms, and stage_balance weighing SMs
// [0, fast_sms) by fast_sm_ratio: every wide tile of a stage on its own fast SM, in every stage,
// and the narrow ones on the rest, so each stage ends sooner counted in capacity-weighted bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instructions/gemv_like.h"
#include "ir/json.h"
#include "ir/validate.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "schedule/tiling.h"
#include "targets/registry.h"

using namespace amk;
using Catch::Matchers::Contains;

namespace {

schedule::ModelConfig model(const std::string& name) {
  auto m = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/" + name);
  REQUIRE(m.is_ok());
  return *m;
}

ir::GpuTarget h100() { return *targets::target_find("h100"); }

ir::ScheduleConfig preset_config(const schedule::ModelConfig& m, const schedule::DecodePreset& preset) {
  auto c = schedule::schedule_config_from_json_text(schedule::decode_preset_json(m, h100(), 256, preset), "preset");
  REQUIRE(c.is_ok());
  return *c;
}

ir::Program lower_preset(const schedule::ModelConfig& m, const schedule::DecodePreset& preset) {
  auto p = schedule::lower(m, preset_config(m, preset), h100(), schedule::LowerOptions{256, ir::DType::BF16, ir::DType::BF16});
  REQUIRE(p.is_ok());
  return *p;
}

// The preset's schedule with the MLP folded (as on an H100), to vary one knob of.
ir::ScheduleConfig folded_preset_config(const schedule::ModelConfig& m) {
  schedule::DecodePreset preset;
  preset.mlp_fold = schedule::MlpFold::On;
  return preset_config(m, preset);
}

ir::Program lower_config(const schedule::ModelConfig& m, const ir::ScheduleConfig& config) {
  auto p = schedule::lower(m, config, h100(), schedule::LowerOptions{256, ir::DType::BF16, ir::DType::BF16});
  REQUIRE(p.is_ok());
  return *p;
}

// The tasks whose label contains `kind` (".mlp_fold[", ".o_proj["), grouped by their stage.
std::map<int32_t, std::vector<const ir::Task*>> stages_of(const ir::Program& p, const std::string& kind) {
  std::map<int32_t, std::vector<const ir::Task*>> out;
  for (const ir::Task& t : p.tasks)
    if (t.label.find(kind) != std::string::npos) out[t.out_counter.value].push_back(&t);
  return out;
}

// A stage's end counted in capacity-weighted bytes: the largest bytes / capacity over its SMs.
double weighted_end(const std::vector<const ir::Task*>& stage, int64_t fast_sms, double ratio) {
  std::map<int32_t, int64_t> bytes;
  for (const ir::Task* t : stage) bytes[*t->sm] += t->est_bytes;
  double end = 0;
  for (const auto& [sm, b] : bytes) end = std::max(end, static_cast<double>(b) / (sm < fast_sms ? ratio : 1.0));
  return end;
}

}  // namespace

TEST_CASE("spans_cover with wide tiles: the wide ones first, the output covered exactly once", "[schedule]") {
  const std::vector<schedule::Span> s = schedule::spans_cover(100, 10, 3, 13);
  REQUIRE(s.size() == 10);  // 3 x 13 = 39, then 61 in tens: 6 full and a 1
  int64_t at = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].off == at);
    at += s[i].len;
    if (i < 3) CHECK(s[i].len == 13);
  }
  CHECK(at == 100);
  CHECK(s.back().len == 1);
  // More wide tiles than the output holds: the last is cut, no empty span.
  const auto short_out = schedule::spans_cover(20, 4, 5, 9);
  REQUIRE(short_out.size() == 3);
  CHECK(short_out[2].len == 2);
  // No wide tiles: exactly the plain cover.
  const auto plain = schedule::spans_cover(50, 7, 0, 99), equal = schedule::spans_cover(50, 7);
  REQUIRE(plain.size() == equal.size());
  for (size_t i = 0; i < plain.size(); ++i) CHECK((plain[i].off == equal[i].off && plain[i].len == equal[i].len));
}

TEST_CASE("wide_tiles_for: wide tiles ratio x wider, covering n in at most sms x per_sm tiles", "[schedule]") {
  // The 8B's fold on an H100 (docs/SM_BALANCE.md): 14336 columns, 24 of 132 SMs 1.09 x as fast.
  const schedule::WideTiles fold = schedule::wide_tiles_for(14336, 132, 24, 1.09, 1);
  CHECK(fold.n_tile == 107);
  CHECK(fold.wide_n_tile == 116);  // ends at max(107, 116 / 1.09 = 106.4) slow-SM rows, against 109
  CHECK(fold.wide_tiles == 24);
  // The 1B's o_proj (2048 rows): 15 and 18 would end at 16.5, later than equal tiles of 16.
  const schedule::WideTiles o = schedule::wide_tiles_for(2048, 132, 24, 1.09, 1);
  CHECK(o.wide_tiles == 0);
  CHECK(o.n_tile == 16);
  for (int64_t n : {1, 7, 512, 2048, 4096, 8192, 14336, 128256})
    for (int64_t per_sm : {1, 2, 3})
      for (double ratio : {1.05, 1.09, 1.3, 2.0}) {
        const schedule::WideTiles w = schedule::wide_tiles_for(n, 132, 24, ratio, per_sm);
        CAPTURE(n, per_sm, ratio);
        const int64_t equal = (n + 132 * per_sm - 1) / (132 * per_sm);
        const auto spans = schedule::spans_cover(n, w.n_tile, w.wide_tiles, w.wide_n_tile);
        CHECK(static_cast<int64_t>(spans.size()) <= 132 * per_sm);
        if (w.wide_tiles == 0) {
          CHECK(w.n_tile == equal);
        } else {
          CHECK(w.wide_tiles == 24 * per_sm);
          CHECK(w.wide_n_tile > w.n_tile);
          // Never later than equal tiles, counted in slow-SM rows.
          CHECK(std::max<double>(w.n_tile, w.wide_n_tile / ratio) < equal);
        }
      }
}

TEST_CASE("wide_tiles_for: no wide tile past the weight stream's task bound where the equal ones fit", "[schedule]") {
  // The 1B's lm_head (128256 rows of 4 KiB), 12 of 132 SMs fast at 1.09: unbounded, the wide
  // tiles were 1048 rows (4.1 MiB), past the 4 MiB a task streams through the ring (row 212).
  const schedule::WideTiles free = schedule::wide_tiles_for(128256, 132, 12, 1.09, 1);
  CHECK(free.wide_n_tile > 1024);
  const schedule::WideTiles bound = schedule::wide_tiles_for(128256, 132, 12, 1.09, 1, 1024);
  CHECK(bound.wide_tiles == 12);
  CHECK(bound.wide_n_tile == 1024);  // the bound itself, the narrow tiles covering the rest
  CHECK(bound.n_tile == 967);
  CHECK(bound.n_tile < 972);  // still ends before the equal tiles
  CHECK(schedule::spans_cover(128256, bound.n_tile, bound.wide_tiles, bound.wide_n_tile).size() <= 132);
  for (int64_t n : {512, 8192, 14336, 128256})
    for (int64_t max_rows : {1, 16, 64, 1000, 1024})
      for (double ratio : {1.05, 1.09, 1.3}) {
        CAPTURE(n, max_rows, ratio);
        const schedule::WideTiles w = schedule::wide_tiles_for(n, 132, 24, ratio, 1, max_rows);
        const int64_t equal = (n + 131) / 132;
        if (equal <= max_rows) CHECK(w.wide_n_tile <= max_rows);  // the bound holds where it can
        if (equal > max_rows) {  // equal tiles past it already: nothing to keep, so no bound
          const schedule::WideTiles u = schedule::wide_tiles_for(n, 132, 24, ratio, 1);
          CHECK((w.n_tile == u.n_tile && w.wide_n_tile == u.wide_n_tile && w.wide_tiles == u.wide_tiles));
        }
        CHECK(schedule::spans_cover(n, w.n_tile, w.wide_tiles, w.wide_n_tile).size() <= 132);
      }
}

TEST_CASE("the preset's wide tiles stay within the bytes the weight stream carries", "[schedule]") {
  CHECK(schedule::DecodePreset{}.wide_tile_max_bytes == static_cast<int64_t>(instructions::kStreamMaxTaskBytes));
  for (const char* name : {"llama-3.2-1b.json", "llama-3-8b.json"})
    for (double ratio : {1.05, 1.09, 1.3}) {
      CAPTURE(name, ratio);
      const schedule::ModelConfig m = model(name);
      schedule::DecodePreset fast;
      fast.fast_sms = 12;
      fast.fast_sm_ratio = ratio;
      const ir::ScheduleConfig c = preset_config(m, fast);
      for (const auto& [proj, knobs] : c.tiling) {
        if (knobs.count("wide_N_tile") == 0) continue;
        const int64_t k = proj == "o_proj" ? m.q_dim() : proj == "down_proj" ? m.intermediate_size : m.hidden_size;
        const int64_t rows = proj == "gate_proj" ? 3 : 1;  // the fold streams gate, up and down^T rows per column
        CAPTURE(proj);
        const auto cap = static_cast<int64_t>(instructions::kStreamMaxTaskBytes);
        if (knobs.at("N_tile") * k * 2 * rows <= cap) CHECK(knobs.at("wide_N_tile") * k * 2 * rows <= cap);
      }
    }
}

TEST_CASE("tiling: wide_tiles and wide_N_tile per projection, together or not at all", "[schedule]") {
  const schedule::ModelConfig m = model("llama-3.2-1b.json");
  ir::ScheduleConfig c;
  c.tiling["o_proj"] = {{"N_tile", 16}, {"wide_tiles", 4}, {"wide_N_tile", 18}};
  auto plan = schedule::tiling_plan(c, m, 256);
  REQUIRE(plan.is_ok());
  CHECK(plan->wide_tiles.at("o_proj") == 4);
  CHECK(plan->wide_n_tile.at("o_proj") == 18);
  CHECK(plan->wide_tiles.count("q_proj") == 0);
  const auto spans = schedule::projection_spans(*plan, "o_proj", 2048);
  CHECK(spans[3].len == 18);
  CHECK(spans[4].len == 16);

  c.tiling["o_proj"] = {{"N_tile", 16}, {"wide_tiles", 4}};
  CHECK_THAT(schedule::tiling_plan(c, m, 256).status().message(),
             Contains("tiling.o_proj") && Contains("wide_N_tile") && Contains("together"));
  c.tiling["o_proj"] = {{"N_tile", 16}, {"wide_N_tile", 18}};
  CHECK_THAT(schedule::tiling_plan(c, m, 256).status().message(), Contains("wide_tiles 0"));
  c.tiling["o_proj"] = {{"wide_tiles", -1}, {"wide_N_tile", 18}};
  CHECK_THAT(schedule::tiling_plan(c, m, 256).status().message(), Contains("tiling.o_proj.wide_tiles"));
  c.tiling.clear();
  c.tiling["gemv"] = {{"wide_tiles", 2}};  // per projection only: a shared width has no "first tiles"
  CHECK_THAT(schedule::tiling_plan(c, m, 256).status().message(),
             Contains("tiling.gemv.wide_tiles") && Contains("unknown tiling parameter"));
}

TEST_CASE("schedule config: fast_sms and fast_sm_ratio checked against the target and the policy", "[schedule]") {
  const ir::GpuTarget t = h100();
  ir::ScheduleConfig c;
  c.sm_assignment = std::string("stage_balance");
  c.fast_sms = 24;
  c.fast_sm_ratio = 1.09;
  CHECK(schedule::schedule_config_check(c, t).is_ok());
  c.fast_sms = 133;
  CHECK_THAT(schedule::schedule_config_check(c, t).message(), Contains("fast_sms: 133") && Contains("[0, 132]"));
  c.fast_sms = 24;
  c.fast_sm_ratio = 0.9;
  CHECK_THAT(schedule::schedule_config_check(c, t).message(), Contains("fast_sm_ratio"));
  c.fast_sm_ratio = 1.09;
  c.sm_assignment = std::string("load_balance");
  CHECK_THAT(schedule::schedule_config_check(c, t).message(), Contains("stage_balance"));
  c.sm_assignment = std::string("stage_balance");
  CHECK_THAT(schedule::schedule_config_check(c, *targets::target_find("cpu")).message(),
             Contains("fast_sms: 24") && Contains("[0, 0]"));  // the CPU VM has no SMs to be fast

  // A schedule file: known knobs, typed like a program's config.
  auto read = schedule::schedule_config_from_json_text(R"({"sm_assignment": "stage_balance", "fast_sms": 8, "fast_sm_ratio": 1.2})", "s.json");
  REQUIRE(read.is_ok());
  CHECK(read->fast_sms == 8);
  CHECK(read->fast_sm_ratio == Approx(1.2));
  CHECK_THAT(schedule::schedule_config_from_json_text(R"({"fast_sms": 1.5})", "s.json").status().message(),
             Contains("fast_sms"));
}

TEST_CASE("the preset's fast_sms: each stage's wide tiles on the fast SMs, the same ones in every stage", "[schedule]") {
  const schedule::ModelConfig m = model("llama-3-8b.json");
  schedule::DecodePreset equal;
  equal.mlp_fold = schedule::MlpFold::On;
  equal.attention_in_o_proj = schedule::AttentionInOProj::Off;
  schedule::DecodePreset fast = equal;
  fast.fast_sms = 24;
  fast.fast_sm_ratio = 1.09;
  const ir::ScheduleConfig c = preset_config(m, fast);
  CHECK(c.fast_sms == 24);
  CHECK(c.fast_sm_ratio == Approx(1.09));
  // The 8B's fold: 14336 columns, equal 109; 24 tiles of 116, then 107. o_proj: 4096 rows, equal
  // 32; 24 tiles of 32, then 31.
  CHECK(c.tiling.at("gate_proj").at("N_tile") == 107);
  CHECK(c.tiling.at("gate_proj").at("wide_tiles") == 24);
  CHECK(c.tiling.at("gate_proj").at("wide_N_tile") == 116);
  CHECK(c.tiling.at("o_proj").at("N_tile") == 31);
  CHECK(c.tiling.at("o_proj").at("wide_N_tile") == 32);
  CHECK(c.tiling.at("lm_head").count("wide_tiles") == 1);
  CHECK(c.tiling.at("q_proj").count("wide_tiles") == 0);  // q / k / v share a stage three ways: equal tiles

  const ir::Program wide = lower_preset(m, fast), plain = lower_preset(m, equal);
  const ir::ValidationResult v = ir::validate(wide);
  INFO(v.report());
  REQUIRE(v.ok);
  for (const char* kind : {".mlp_fold[", ".o_proj["}) {
    const auto wide_stages = stages_of(wide, kind), plain_stages = stages_of(plain, kind);
    REQUIRE(wide_stages.size() == 32);  // one per layer
    for (const auto& [counter, stage] : wide_stages) {
      CAPTURE(kind, counter);
      // Every wide tile on its own SM in [0, 24), and every narrow one outside it.
      const int64_t wide_n = c.tiling.at(kind == std::string(".o_proj[") ? "o_proj" : "gate_proj").at("wide_N_tile");
      std::set<int32_t> wide_sms;
      for (const ir::Task* t : stage) {
        const bool is_wide = t->params.int_or("N_tile", 0) == wide_n;
        CHECK(is_wide == (*t->sm < 24));
        if (is_wide) CHECK(wide_sms.insert(*t->sm).second);
      }
      CHECK(wide_sms.size() == 24);
    }
    // Each stage ends sooner counted in weighted bytes than with equal tiles on the same SMs.
    auto w = wide_stages.begin();
    for (auto p = plain_stages.begin(); p != plain_stages.end(); ++p, ++w)
      CHECK(weighted_end(w->second, 24, 1.09) < weighted_end(p->second, 24, 1.09));
  }
  // The program JSON keeps the knobs, and one without them reads as before.
  const std::string text = ir::program_to_json(wide);
  CHECK_THAT(text, Contains("\"fast_sms\": 24"));
  auto back = ir::program_from_json_text(text);
  REQUIRE(back.is_ok());
  REQUIRE(back->config.has_value());
  CHECK(back->config->fast_sms == 24);
  CHECK(back->config->fast_sm_ratio == Approx(1.09));
  CHECK_THAT(ir::program_to_json(plain), !Contains("fast_sms"));
}

TEST_CASE("stage_balance with every capacity 1 is the unweighted order", "[schedule]") {
  // fast_sms 0 and fast_sms > 0 at ratio 1.0 weigh nothing: the same SM for every task.
  const schedule::ModelConfig m = model("llama-3.2-1b.json");
  ir::ScheduleConfig c = folded_preset_config(m);
  const auto lowered = [&](const ir::ScheduleConfig& config) { return lower_config(m, config); };
  const ir::Program base = lowered(c);
  c.fast_sms = 24;
  c.fast_sm_ratio = 1.0;
  const ir::Program same = lowered(c);
  REQUIRE(base.tasks.size() == same.tasks.size());
  for (size_t i = 0; i < base.tasks.size(); ++i) CHECK(*base.tasks[i].sm == *same.tasks[i].sm);
  c.fast_sm_ratio = 1.09;  // and with a ratio, the same equal tiles move
  const ir::Program moved = lowered(c);
  size_t differ = 0;
  for (size_t i = 0; i < base.tasks.size(); ++i) differ += *base.tasks[i].sm != *moved.tasks[i].sm;
  CHECK(differ > 0);
}

TEST_CASE("stage_balance weighs only stages with a task for every SM", "[schedule]") {
  // The 1B on 132 SMs, equal tiles: the q/k/v, attention and 128-tile o_proj stages have fewer
  // tasks than SMs, so every task has an SM of its own either way. Weighing them put their first
  // tasks on the same fast SMs layer after layer (12.5% of them on 9.1% of the SMs).
  const schedule::ModelConfig m = model("llama-3.2-1b.json");
  ir::ScheduleConfig c = folded_preset_config(m);
  const auto lowered = [&](const ir::ScheduleConfig& config) { return lower_config(m, config); };
  const ir::Program base = lowered(c);
  c.fast_sms = 24;
  c.fast_sm_ratio = 1.09;
  const ir::Program fast = lowered(c);
  REQUIRE(base.tasks.size() == fast.tasks.size());
  std::map<int32_t, size_t> stage_size;
  for (const ir::Task& t : fast.tasks) ++stage_size[t.out_counter.value];
  // Up to the first full stage nothing was weighed, so every task keeps its unweighted SM.
  size_t i = 0;
  for (; i < fast.tasks.size() && stage_size[fast.tasks[i].out_counter.value] < 132; ++i) {
    CAPTURE(fast.tasks[i].label);
    CHECK(*fast.tasks[i].sm == *base.tasks[i].sm);
  }
  CHECK(i > 100);  // embed, the first layer's q/k/v and attention at least
  REQUIRE(i < fast.tasks.size());
  // After it, the small stages still spread over the fast SMs no more than over the others.
  size_t small = 0, on_fast = 0;
  for (const ir::Task& t : fast.tasks)
    if (stage_size[t.out_counter.value] < 132) {
      ++small;
      on_fast += *t.sm < 24;
    }
  REQUIRE(small > 0);
  CHECK(static_cast<double>(on_fast) / static_cast<double>(small) < 24.0 / 132.0 + 0.01);
  // And the full stages are weighed: some task moved.
  size_t moved = 0;
  for (size_t k = i; k < fast.tasks.size(); ++k) moved += *fast.tasks[k].sm != *base.tasks[k].sm;
  CHECK(moved > 0);
}
