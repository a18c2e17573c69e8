// tests/tools/amk_bench_validate_test.cpp: the benchmark's generated Llama-shaped program
// round-trips through the JSON writer and reader and is ACCEPTED by validate() (small size).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tools/tool_runner.h"

TEST_CASE("amk-bench-validate: a generated 3000-task program is ACCEPTED", "[tools]") {
  auto r = amk::test::run_tool(AMK_BENCH_VALIDATE_BIN,
                               "--json --tasks 3000 --dir " + amk::test::shell_quote(AMK_BINARY_DIR));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc.at("ok") == true);
  REQUIRE(doc.at("results").size() == 1);
  const auto& row = doc.at("results")[0];
  CHECK(row.at("ok") == true);
  CHECK(row.at("tasks").get<int64_t>() > 2500);
  CHECK(row.at("tasks").get<int64_t>() < 3500);
  CHECK(row.at("json_mb").get<double>() > 0.0);
  CHECK(row.at("edges").get<int64_t>() > 0);
}

TEST_CASE("amk-bench-validate: usage errors exit 2", "[tools]") {
  CHECK(amk::test::run_tool(AMK_BENCH_VALIDATE_BIN, "--tasks 0").exit_code == 2);
  CHECK(amk::test::run_tool(AMK_BENCH_VALIDATE_BIN, "--target h900 --tasks 10").exit_code == 2);
}
