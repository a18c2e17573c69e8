// tests/targets/registry_test.cpp: every embedded GpuTarget record loads and is plausible, look-ups
// fail with useful messages, and the bandwidth floor is weight_bytes / bandwidth.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "targets/registry.h"

using amk::StatusCode;
using amk::targets::target_find;
using amk::targets::target_names;

TEST_CASE("targets: the expected records are embedded", "[targets]") {
  const auto names = target_names();
  for (const char* want : {"a100", "b200", "cpu", "h100", "h200", "l4", "mi250x", "mi300x", "rtx5090"}) {
    INFO(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  CHECK(std::is_sorted(names.begin(), names.end()));
}

TEST_CASE("targets: every record loads and is plausible", "[targets]") {
  for (const std::string& name : target_names()) {
    INFO("target " << name);
    auto t = target_find(name);
    REQUIRE(t.is_ok());
    CHECK(t->name == name);
    CHECK(t->hbm_bandwidth_gbs > 0.0);
    CHECK(t->fp16_tflops > 0.0);
    CHECK_FALSE(t->note.empty());
    if (name == "cpu") {
      CHECK(t->num_sms == 0);  // "use the CPUs this process may use"
      CHECK(t->sm_arch == 0);
      continue;
    }
    CHECK(t->num_sms > 0);
    CHECK(t->sm_arch > 0);
    CHECK(t->smem_bytes_per_sm > 0);
    CHECK(t->smem_bytes_per_block_optin > 0);
    CHECK(t->smem_bytes_per_block_optin <= t->smem_bytes_per_sm);
    CHECK(t->regs_per_sm >= 65536);
    CHECK(t->max_threads_per_sm >= 1024);
    CHECK(t->max_regs_per_thread >= 255);
    CHECK(t->l2_bytes >= (4 << 20));
    CHECK(t->hbm_bytes >= (int64_t{16} << 30));
    CHECK(t->clock_ghz > 0.5);
    CHECK(t->supports_cooperative);
  }
}

TEST_CASE("targets: datasheet spot checks", "[targets]") {
  auto h100 = target_find("h100");
  REQUIRE(h100.is_ok());
  CHECK(h100->num_sms == 132);
  CHECK(h100->sm_arch == 90);
  CHECK(h100->hbm_bandwidth_gbs == Approx(3350.0));
  auto b200 = target_find("B200");  // case-insensitive
  REQUIRE(b200.is_ok());
  CHECK(b200->num_sms == 148);
  auto mi300x = target_find("mi300x");
  REQUIRE(mi300x.is_ok());
  CHECK(mi300x->num_sms == 304);
}

TEST_CASE("targets: architecture names follow the sm_arch convention", "[targets]") {
  auto name_of = [](const char* t) {
    auto r = target_find(t);
    REQUIRE(r.is_ok());
    return amk::targets::target_arch_name(*r);
  };
  CHECK(name_of("h100") == "sm_90");
  CHECK(name_of("rtx5090") == "sm_120");
  CHECK(name_of("l4") == "sm_89");
  CHECK(name_of("mi250x") == "gfx90a");
  CHECK(name_of("mi300x") == "gfx942");
  CHECK(name_of("cpu") == "cpu");
}

TEST_CASE("targets: bandwidth_bound_us is weight_bytes / bandwidth", "[targets]") {
  auto h100 = target_find("h100");
  REQUIRE(h100.is_ok());
  const int64_t two_gb = 2'000'000'000;
  CHECK(h100->bandwidth_bound_us(two_gb) == Approx(2e9 / 3350e9 * 1e6));  // ~597 us
  CHECK(h100->bandwidth_bound_us(two_gb) == Approx(597.0149).epsilon(1e-6));
  for (const std::string& name : target_names()) {
    auto t = target_find(name);
    REQUIRE(t.is_ok());
    CHECK(t->bandwidth_bound_us(two_gb) == Approx(2e9 / (t->hbm_bandwidth_gbs * 1e9) * 1e6));
  }
}

TEST_CASE("targets: an unknown name lists the known ones", "[targets]") {
  auto r = target_find("h900");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::NotFound);
  CHECK_THAT(r.status().message(), Catch::Contains("h900") && Catch::Contains("h100") && Catch::Contains("mi300x"));
}

TEST_CASE("targets: target_load_file reads a data file and reports bad files", "[targets]") {
  const std::string dir = AMK_SOURCE_DIR "/targets/data/";
  auto from_file = amk::targets::target_load_file(dir + "h200.json");
  REQUIRE(from_file.is_ok());
  auto embedded = target_find("h200");
  REQUIRE(embedded.is_ok());
  CHECK(from_file->name == embedded->name);
  CHECK(from_file->num_sms == embedded->num_sms);
  CHECK(from_file->hbm_bytes == embedded->hbm_bytes);
  CHECK(from_file->hbm_bandwidth_gbs == embedded->hbm_bandwidth_gbs);
  CHECK(from_file->note == embedded->note);

  auto missing = amk::targets::target_load_file(dir + "no_such_target.json");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::IoError);
  CHECK_THAT(missing.status().message(), Catch::Contains("no_such_target.json"));

  const std::string bad = AMK_BINARY_DIR "/registry_test_bad_target.json";
  {
    std::ofstream out(bad);
    out << "{\"name\": \"x\", \"num_sms\": ";  // truncated
  }
  auto malformed = amk::targets::target_load_file(bad);
  std::remove(bad.c_str());
  REQUIRE_FALSE(malformed.is_ok());
  CHECK(malformed.status().code() == StatusCode::ParseError);
  CHECK_THAT(malformed.status().message(), Catch::Contains("registry_test_bad_target.json"));

  auto resolved = amk::targets::target_resolve(dir + "l4.json");
  REQUIRE(resolved.is_ok());
  CHECK(resolved->name == "l4");
}
