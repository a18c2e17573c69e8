// tests/schedule/decode_preset_test.cpp: the gpu-decode preset (schedule/decode_preset.cpp), the
// schedule `amk-bench decode` lowers with by default and amk-compile writes with --preset: each
// stage's projections in one tile per SM (or GEMV tiles of about tile_kib KiB), stage_balance,
// the LM head in lm_head_tiles_per_sm tiles per SM, the argmax in argmax_tiles_per_sm tiles per SM,
// split-KV partitions by max_seq. The
// performance figures in docs/PERFORMANCE.md were measured with exactly these shapes, so a change
// here must be deliberate.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedule/decode_preset.h"
#include "schedule/model_config.h"
#include "targets/registry.h"

using namespace amk;

TEST_CASE("the gpu-decode preset: one tile per SM per stage, stage_balance, split-KV by max_seq", "[schedule]") {
  auto model = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(model.is_ok());
  const schedule::DecodePreset defaults;
  CHECK(defaults.tiles_per_stage == 1);
  CHECK(defaults.lm_head_tiles_per_sm == 1);
  const auto d = nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 8192, defaults));
  CHECK(d["sm_assignment"] == "stage_balance");
  // A stage's projections share its SMs: q/k/v (2048 + 512 + 512 rows) in 24-row tiles (86 + 22 +
  // 22 = 130 tasks), gate/up (2 x 8192 rows) in 125-row tiles (132 tasks), o and down (2048 rows
  // each) in 16-row tiles (128 tasks).
  CHECK(d["tiling"]["q_proj"]["N_tile"] == 24);
  CHECK(d["tiling"]["k_proj"]["N_tile"] == 24);
  CHECK(d["tiling"]["v_proj"]["N_tile"] == 24);
  CHECK(d["tiling"]["o_proj"]["N_tile"] == 16);
  CHECK(d["tiling"]["gate_proj"]["N_tile"] == 125);
  CHECK(d["tiling"]["up_proj"]["N_tile"] == 125);
  CHECK(d["tiling"]["down_proj"]["N_tile"] == 16);
  CHECK(d["tiling"]["lm_head"]["N_tile"] == 972);
  // The argmax in one tile per SM, a multiple of 8 logits each (972 -> 976: 132 tiles).
  CHECK(defaults.argmax_tiles_per_sm == 1);
  CHECK(d["tiling"]["argmax"]["N_tile"] == 976);
  schedule::DecodePreset whole_argmax = defaults;
  whole_argmax.argmax_tiles_per_sm = 0;
  CHECK_FALSE(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 8192, whole_argmax))["tiling"].contains("argmax"));
  schedule::DecodePreset two = defaults;
  two.tiles_per_stage = 2;
  CHECK(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 8192, two))["tiling"]["q_proj"]["N_tile"] == 12);

  // The fixed-size tiles of the earlier default (rows 14-25 of docs/PERFORMANCE.md).
  schedule::DecodePreset tiling = defaults;
  tiling.tiles_per_stage = 0;
  tiling.sm_assignment = "load_balance";
  // Today's attention stage whatever AMK_ATTENTION_IN_O says (the attention in o_proj, which takes
  // the short caches below in auto, has its own tests: attention_o_proj_lower_test.cpp).
  tiling.attention_in_o_proj = schedule::AttentionInOProj::Off;
  CHECK(tiling.tile_kib == 256);
  const auto j = nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 8192, tiling));
  CHECK(j["sm_assignment"] == "load_balance");
  // hidden 2048 (bf16 rows of 4 KiB): 64 rows per 256 KiB tile; down_proj rows are 16 KiB: 16 rows.
  CHECK(j["tiling"]["q_proj"]["N_tile"] == 64);
  CHECK(j["tiling"]["gate_proj"]["N_tile"] == 64);
  CHECK(j["tiling"]["down_proj"]["N_tile"] == 16);
  // vocab 128256 over 132 SMs: 972 rows per SM.
  CHECK(j["tiling"]["lm_head"]["N_tile"] == 972);
  // max_seq 8192: past 6144 rows, 16 partitions of a KV head's four query heads (GQA group 4).
  CHECK(j["tiling"]["attention"]["kv_partitions"] == 16);
  CHECK(j["tiling"]["attention"]["heads_per_task"] == 4);
  // Up to 6144 rows one partition per 2048, one head a task.
  for (const auto& [max_seq, parts] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2048, 1}, {2049, 2}, {6144, 3}, {6145, 16}}) {
    INFO("max_seq " << max_seq);
    CHECK(schedule::decode_preset_kv_partitions(tiling, *model, max_seq) == parts);
    CHECK(schedule::decode_preset_heads_per_task(tiling, *model, max_seq) == (parts == 16 ? 4 : 1));
  }
  // A GQA group outside [4, 8] keeps 8 partitions past 6144 rows: two heads a task when it is even.
  schedule::ModelConfig mha = *model;
  mha.num_key_value_heads = mha.num_attention_heads;  // group 1
  CHECK(schedule::decode_preset_kv_partitions(tiling, mha, 8192) == 8);
  CHECK(schedule::decode_preset_heads_per_task(tiling, mha, 8192) == 1);
  schedule::ModelConfig wide = *model;
  wide.num_key_value_heads = 2;  // group 16
  CHECK(schedule::decode_preset_kv_partitions(tiling, wide, 8192) == 8);
  CHECK(schedule::decode_preset_heads_per_task(tiling, wide, 8192) == 2);
  schedule::DecodePreset grouped = tiling;
  grouped.heads_per_task = 4;  // given: as given, within [1, n_heads]
  CHECK(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 8192, grouped))["tiling"]["attention"]["heads_per_task"] == 4);
  grouped.heads_per_task = 1000;
  CHECK(schedule::decode_preset_heads_per_task(grouped, *model, 8192) == 32);
  grouped.heads_per_task = 1;  // one head a task at 8 partitions too when asked
  CHECK(schedule::decode_preset_heads_per_task(grouped, *model, 8192) == 1);
  grouped.kv_partitions = 8;  // explicit 8 partitions: auto heads pair up as well
  grouped.heads_per_task = 0;
  CHECK(schedule::decode_preset_heads_per_task(grouped, *model, 256) == 2);

  schedule::DecodePreset plain = tiling;
  plain.lm_head_tiles_per_sm = 0;  // the LM head tiled like the rest
  const auto k = nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 128, plain));
  CHECK(k["tiling"]["lm_head"]["N_tile"] == 64);
  CHECK(k["tiling"]["attention"]["kv_partitions"] == 1);
  CHECK(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 4096, plain))["tiling"]["attention"]["kv_partitions"] == 2);
  CHECK(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 65536, plain))["tiling"]["attention"]["kv_partitions"] == 16);
  plain.kv_partitions = 4;  // given: whatever max_seq says
  CHECK(nlohmann::json::parse(schedule::decode_preset_json(*model, *targets::target_find("h200"), 128, plain))["tiling"]["attention"]["kv_partitions"] == 4);
}
