// tests/schedule/schedule_config_test.cpp: schedule files (a ScheduleConfig as JSON) parse into
// every knob, and mistakes are reported with the JSON path of the knob.
#include <catch2/catch.hpp>

#include "schedule/schedule_config.h"
#include "targets/registry.h"

using namespace amk;
using Catch::Matchers::Contains;

TEST_CASE("schedule file: every knob is read", "[schedule]") {
  auto c = schedule::schedule_config_from_json_text(R"({
      "tiling": {"gemv": {"N_tile": 128}, "lm_head": {"N_tile": 512},
                 "attention": {"kv_partitions": 4, "heads_per_task": 2}},
      "fusion_grouping": [["rmsnorm", "q_proj", "k_proj", "v_proj"], ["o_proj", "residual_add"]],
      "sm_assignment": "round_robin", "pipelining_depth": 3, "page_allocation": "linear",
      "threads_per_block": 512, "smem_bytes_per_block": 65536})",
                                                    "s.json");
  REQUIRE(c.is_ok());
  CHECK(c->tiling.at("gemv").at("N_tile") == 128);
  CHECK(c->tiling.at("lm_head").at("N_tile") == 512);
  CHECK(c->tiling.at("attention").at("kv_partitions") == 4);
  CHECK(c->fusion_grouping.size() == 2);
  CHECK(c->fusion_grouping[1][0] == "o_proj");
  CHECK(std::get<std::string>(c->sm_assignment) == "round_robin");
  CHECK(c->pipelining_depth == 3);
  CHECK(c->page_allocation == "linear");
  CHECK(c->threads_per_block == 512);
  CHECK(c->smem_bytes_per_block == 65536);
  CHECK(schedule::schedule_config_check(*c, *targets::target_find("h100")).is_ok());

  auto empty = schedule::schedule_config_from_json_text("{}", "s.json");
  REQUIRE(empty.is_ok());
  CHECK(std::get<std::string>(empty->sm_assignment) == "load_balance");  // the IR spec defaults
  CHECK(empty->page_allocation == "graph_color");

  auto explicit_map = schedule::schedule_config_from_json_text(R"({"sm_assignment": {"0": 3, "1": 0}})", "s.json");
  REQUIRE(explicit_map.is_ok());
  const auto& map = std::get<std::map<int64_t, int64_t>>(explicit_map->sm_assignment);
  CHECK(map.at(0) == 3);
  CHECK(map.at(1) == 0);
}

TEST_CASE("schedule file: mistakes name the JSON path", "[schedule]") {
  auto message = [](const char* text) {
    auto c = schedule::schedule_config_from_json_text(text, "s.json");
    REQUIRE_FALSE(c.is_ok());
    return c.status().message();
  };
  CHECK_THAT(message(R"({"page_alocation": "linear"})"), Contains("s.json: page_alocation") && Contains("unknown"));
  CHECK_THAT(message(R"({"tiling": {"gemv": {"N_tile": 1.5}}})"), Contains("tiling.gemv.N_tile"));
  CHECK_THAT(message(R"({"tiling": {"gemv": 64}})"), Contains("tiling.gemv"));
  CHECK_THAT(message(R"({"fusion_grouping": [["o_proj", 3]]})"), Contains("fusion_grouping[0][1]"));
  CHECK_THAT(message(R"({"sm_assignment": {"x": 1}})"), Contains("sm_assignment.x"));
  CHECK_THAT(message(R"({"sm_assignment": {"2": "a"}})"), Contains("sm_assignment[\"2\"]"));
  CHECK_THAT(message(R"({"threads_per_block": "256"})"), Contains("threads_per_block"));
  CHECK_THAT(message("[1, 2]"), Contains("expected a JSON object"));
  auto broken = schedule::schedule_config_from_json_text("{", "s.json");
  CHECK(broken.status().code() == StatusCode::ParseError);
  CHECK(schedule::schedule_config_load("/nonexistent.json").status().code() == StatusCode::IoError);
}
