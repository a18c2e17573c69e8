// tests/tools/decode_schedule_test.cpp: the schedule `amk-bench decode` lowers with by default
// (tools/bench/decode_schedule.cpp): GEMV tiles of about tile_kib KiB, the LM head in
// lm_head_tiles_per_sm tiles per SM, split-KV partitions by context. The performance figures in
// docs/PERFORMANCE.md were measured with exactly these shapes, so a change here must be deliberate.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedule/model_config.h"
#include "tools/bench/decode_bench.h"

using namespace amk;

TEST_CASE("amk-bench decode's default schedule: 256 KiB tiles, one LM-head tile per SM, split-KV by ctx",
          "[tools][bench]") {
  auto model = schedule::model_config_load(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(model.is_ok());
  const bench::DecodeTiling tiling;  // the defaults
  CHECK(tiling.tile_kib == 256);
  CHECK(tiling.lm_head_tiles_per_sm == 1);
  const auto j = nlohmann::json::parse(bench::default_decode_schedule_json(*model, 132, 8192, tiling));
  // hidden 2048 (bf16 rows of 4 KiB): 64 rows per 256 KiB tile; down_proj rows are 16 KiB: 16 rows.
  CHECK(j["tiling"]["q_proj"]["N_tile"] == 64);
  CHECK(j["tiling"]["gate_proj"]["N_tile"] == 64);
  CHECK(j["tiling"]["down_proj"]["N_tile"] == 16);
  // vocab 128256 over 132 SMs: 972 rows per SM.
  CHECK(j["tiling"]["lm_head"]["N_tile"] == 972);
  CHECK(j["tiling"]["attention"]["kv_partitions"] == 8);
  CHECK(j["tiling"]["attention"]["heads_per_task"] == 1);

  bench::DecodeTiling plain = tiling;
  plain.lm_head_tiles_per_sm = 0;  // the LM head tiled like the rest
  const auto k = nlohmann::json::parse(bench::default_decode_schedule_json(*model, 132, 128, plain));
  CHECK(k["tiling"]["lm_head"]["N_tile"] == 64);
  CHECK(k["tiling"]["attention"]["kv_partitions"] == 1);
}
