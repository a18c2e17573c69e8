// tests/tools/tune_space_test.cpp: amk-bench tune's search space (tools/bench/tune_space.cpp): the
// built-in space for a model, space files and their refusals by element, applying a value to the
// preset, and the labels the tool prints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "schedule/decode_preset.h"
#include "schedule/model_config.h"
#include "tools/bench/tune_space.h"

using namespace amk;
using Catch::Matchers::Contains;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

schedule::ModelConfig llama_1b() {
  auto m = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(m.is_ok());
  return *m;
}

const bench::TuneAxis* axis(const bench::TuneSpace& s, const std::string& name) {
  for (const bench::TuneAxis& a : s.axes)
    if (a.name == name) return &a;
  return nullptr;
}

/// The refusal's message for a space given as JSON text.
std::string refusal(const std::string& text) {
  auto r = bench::tune_space_from_json(ordered_json::parse(text), "space.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::InvalidArgument);
  return r.status().message();
}

}  // namespace

TEST_CASE("tune space: the built-in space starts at the preset and fits the model and cache", "[tools]") {
  const schedule::ModelConfig m = llama_1b();  // 32 query heads, 8 KV heads: a GQA group of 4
  const bench::TuneSpace big = bench::default_tune_space(m, 8192);
  // Every axis lists the preset's own value first, so the first pass re-finds the start for free.
  const schedule::DecodePreset defaults;
  for (const bench::TuneAxis& a : big.axes) {
    INFO(a.name);
    REQUIRE_FALSE(a.values.empty());
    auto applied = bench::tune_apply(defaults, a.name, a.values.front());
    REQUIRE(applied.is_ok());
    CHECK(bench::tune_label(*applied) == "default");
  }
  CHECK(axis(big, "kv_partitions")->values == std::vector<json>{0, 1, 2, 4, 8});
  // 0 is four heads a task at max_seq 8192 (16 partitions), one at 1024: never measured twice.
  CHECK(axis(big, "heads_per_task")->values == std::vector<json>{0, 1, 2});
  CHECK(axis(bench::default_tune_space(m, 1024), "heads_per_task")->values == std::vector<json>{0, 2, 4});
  CHECK(axis(big, "sm_assignment")->values.size() == 3);
  // Every fusion group is left out once, and [] (all on) comes first.
  CHECK(axis(big, "drop_fusion")->values.size() == 8);
  CHECK(axis(big, "drop_fusion")->values.front() == json::array());
  // The rope in the q / k GEMVs (the preset's default) first, then in the attention tasks.
  CHECK(axis(big, "rope_in_qkv")->values == std::vector<json>{true, false});
  // The MLP fold by the target rule first, then forced on and off.
  CHECK(axis(big, "mlp_fold")->values == std::vector<json>{"auto", "on", "off"});
  // A 256-row cache has no room for partitions of 256 rows beyond one.
  CHECK(axis(bench::default_tune_space(m, 256), "kv_partitions")->values == std::vector<json>{0, 1});
  CHECK(axis(bench::default_tune_space(m, 1024), "kv_partitions")->values == std::vector<json>{0, 1, 2, 4});
}

TEST_CASE("tune space: a file's axes in its own order, every value applied to the preset", "[tools]") {
  auto r = bench::tune_space_from_json(
      ordered_json::parse(R"({"sm_assignment": ["load_balance", "stage_balance"], "tiles_per_stage": [2, 1],
                              "drop_fusion": [[], ["kv_append,rope", "attention,rope"]]})"),
      "space.json");
  REQUIRE(r.is_ok());
  REQUIRE(r->axes.size() == 3);
  CHECK(r->axes[0].name == "sm_assignment");  // not sorted: the search takes them in this order
  CHECK(r->axes[1].name == "tiles_per_stage");
  CHECK(r->axes[2].name == "drop_fusion");
  auto p = bench::tune_apply(schedule::DecodePreset{}, "tiles_per_stage", 2);
  REQUIRE(p.is_ok());
  CHECK(p->tiles_per_stage == 2);
  p = bench::tune_apply(*p, "drop_fusion", json::array({"kv_append,rope", "attention,rope"}));
  REQUIRE(p.is_ok());
  CHECK(p->drop_fusion == std::vector<std::string>{"kv_append,rope", "attention,rope"});
  p = bench::tune_apply(*p, "sm_assignment", "load_balance");
  REQUIRE(p.is_ok());
  CHECK(bench::tune_label(*p) == "tiles_per_stage=2 sm_assignment=load_balance drop_fusion=kv_append,rope+attention,rope");
  CHECK(bench::tune_preset_json(*p)["rope_in_qkv"] == true);
  p = bench::tune_apply(*p, "rope_in_qkv", false);
  REQUIRE(p.is_ok());
  CHECK_FALSE(p->rope_in_qkv);
  CHECK(bench::tune_label(*p) ==
        "tiles_per_stage=2 sm_assignment=load_balance drop_fusion=kv_append,rope+attention,rope rope_in_qkv=false");
  const ordered_json knobs = bench::tune_preset_json(*p);
  CHECK(knobs["rope_in_qkv"] == false);
  CHECK(knobs["tiles_per_stage"] == 2);
  CHECK(knobs["kv_partitions"] == 0);
  CHECK(knobs["drop_fusion"].size() == 2);
  CHECK(knobs["mlp_fold"] == "auto");
  p = bench::tune_apply(*p, "mlp_fold", "off");
  REQUIRE(p.is_ok());
  CHECK(p->mlp_fold == schedule::MlpFold::Off);
  CHECK(bench::tune_preset_json(*p)["mlp_fold"] == "off");
  CHECK_THAT(bench::tune_label(*p), Contains("rope_in_qkv=false mlp_fold=off"));
  // A value the space never validated is a bug in the caller, not silently ignored.
  CHECK(bench::tune_apply(schedule::DecodePreset{}, "kv_partitions", 17).status().code() == StatusCode::Internal);
  CHECK(bench::tune_apply(schedule::DecodePreset{}, "no_such_axis", 1).status().code() == StatusCode::Internal);
}

TEST_CASE("tune space: bad space files are refused naming the axis and the element", "[tools]") {
  CHECK_THAT(refusal("{}"), Contains("space.json: a tune space is a non-empty JSON object"));
  CHECK_THAT(refusal("[1, 2]"), Contains("a tune space is a non-empty JSON object"));
  CHECK_THAT(refusal(R"({"tiles_per_stag": [1]})"), Contains("'tiles_per_stag' is not a tune axis (axes: tiles_per_stage,"));
  CHECK_THAT(refusal(R"({"tiles_per_stage": 2})"), Contains("space.json: tiles_per_stage: must be a non-empty array"));
  CHECK_THAT(refusal(R"({"tiles_per_stage": []})"), Contains("tiles_per_stage: must be a non-empty array"));
  CHECK_THAT(refusal(R"({"kv_partitions": [1, 2, 17]})"), Contains("space.json: kv_partitions[2]: 17 is not in [0, 16]"));
  CHECK_THAT(refusal(R"({"heads_per_task": [-1]})"), Contains("heads_per_task[0]: -1 is not in [0, 1024]"));
  CHECK_THAT(refusal(R"({"tiles_per_stage": [1.5]})"), Contains("tiles_per_stage[0]: 1.5 is not an integer"));
  CHECK_THAT(refusal(R"({"tiles_per_stage": ["2"]})"), Contains("tiles_per_stage[0]: \"2\" is not an integer"));
  CHECK_THAT(refusal(R"({"tiles_per_stage": [1, 2, 1]})"), Contains("tiles_per_stage[2]: 1 is listed twice"));
  CHECK_THAT(refusal(R"({"sm_assignment": ["fastest"]})"), Contains("sm_assignment[0]:"));
  CHECK_THAT(refusal(R"({"sm_assignment": ["fastest"]})"), Contains("fastest"));
  CHECK_THAT(refusal(R"({"sm_assignment": [3]})"), Contains("sm_assignment[0]: 3 is not a string"));
  CHECK_THAT(refusal(R"({"rope_in_qkv": [true, 1]})"), Contains("space.json: rope_in_qkv[1]: 1 is not true or false"));
  CHECK_THAT(refusal(R"({"rope_in_qkv": [false, false]})"), Contains("rope_in_qkv[1]: false is listed twice"));
  CHECK_THAT(refusal(R"({"mlp_fold": ["auto", "yes"]})"), Contains("space.json: mlp_fold[1]: \"yes\" is not \"auto\", \"on\" or \"off\""));
  CHECK_THAT(refusal(R"({"mlp_fold": [true]})"), Contains("mlp_fold[0]: true is not \"auto\""));
  CHECK_THAT(refusal(R"({"drop_fusion": ["rope,kv_append"]})"),
             Contains("drop_fusion[0]: \"rope,kv_append\" is not an array of fusion groups"));
  CHECK_THAT(refusal(R"({"drop_fusion": [["rope,kvappend"]]})"),
             Contains("drop_fusion[0]: 'rope,kvappend' is not a fusion group of the built-in schedule"));
  CHECK_THAT(refusal(R"({"drop_fusion": [[1]]})"), Contains("drop_fusion[0]: [1]: 1 is not a string"));
}

TEST_CASE("tune space: space files that cannot be read or parsed", "[tools]") {
  auto missing = bench::tune_space_load(std::string(AMK_BINARY_DIR) + "/no_such_space.json");
  CHECK(missing.status().code() == StatusCode::IoError);
  CHECK_THAT(missing.status().message(), Contains("no_such_space.json: cannot open the tune space file"));
  const std::string path = std::string(AMK_BINARY_DIR) + "/tune_space_test_bad.json";
  {
    std::ofstream(path) << "{\"tiles_per_stage\": [1, 2";
  }
  auto bad = bench::tune_space_load(path);
  CHECK(bad.status().code() == StatusCode::ParseError);
  CHECK_THAT(bad.status().message(), Contains("tune_space_test_bad.json: not valid JSON"));
  {
    std::ofstream(path) << "{\"argmax_tiles_per_sm\": [0, 2]}";
  }
  auto good = bench::tune_space_load(path);
  REQUIRE(good.is_ok());
  CHECK(good->axes.at(0).values == std::vector<json>{0, 2});
  std::remove(path.c_str());
}

TEST_CASE("tune space: every integer axis has the range its amk-bench decode flag takes", "[tools]") {
  for (const std::string& name : bench::tune_axis_names()) {
    INFO(name);
    const bench::KnobRange r = bench::preset_knob_range(name);
    if (name == "sm_assignment" || name == "drop_fusion" || name == "rope_in_qkv" || name == "mlp_fold") {
      CHECK(r.lo > r.hi);  // not an integer knob: empty
      continue;
    }
    REQUIRE(r.lo <= r.hi);
    // Both ends are values a space may hold; one past either end is refused, naming the range.
    const std::string range = "[" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]";
    CHECK(bench::tune_space_from_json(ordered_json{{name, {r.lo, r.hi}}}, "space.json").is_ok());
    CHECK_THAT(refusal(ordered_json{{name, {r.hi + 1}}}.dump()), Contains(range));
    CHECK_THAT(refusal(ordered_json{{name, {r.lo - 1}}}.dump()), Contains(range));
  }
  CHECK(bench::preset_knob_range("tiles_per_stag").lo > bench::preset_knob_range("tiles_per_stag").hi);
  CHECK(bench::preset_knob_range("kv_partitions").hi == 16);  // 8 combine operands x 2 stacked rows
}
