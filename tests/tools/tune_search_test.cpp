// tests/tools/tune_search_test.cpp: amk-bench tune's coordinate descent (tools/bench/tune_search.cpp)
// driven by made-up measurements: it adopts only checked candidates that beat the incumbent by more
// than min_gain, measures a schedule once however often it is reached, walks the axes again after
// an adoption, stops at the candidate budget, and measures nothing when the start fails.
#include <catch2/catch.hpp>

#include <map>

#include "tools/bench/tune_search.h"
#include "tools/bench/tune_space.h"

using namespace amk;
using nlohmann::ordered_json;

namespace {

bench::TuneSpace space_of(const char* text) {
  auto s = bench::tune_space_from_json(ordered_json::parse(text), "test");
  REQUIRE(s.is_ok());
  return *s;
}

/// The key of a preset: its knobs (so presets differing only in an ignored knob stay distinct).
std::string key_of(const schedule::DecodePreset& p) { return bench::tune_preset_json(p).dump(); }

/// Whether `knobs` has "axis=value".
bool has(const ordered_json& knobs, const std::string& what) {
  const size_t eq = what.find('=');
  return knobs.at(what.substr(0, eq)).dump() == what.substr(eq + 1);
}

/// Made-up times: a base of 10 ms, minus `gain` per knob value, noise-free; a preset with a knob
/// value in `reject` (or any preset, with `reject_all`) fails its check.
struct FakeDevice {
  std::map<std::string, double> gain;         ///< "axis=value" -> ms saved
  std::map<std::string, std::string> reject;  ///< "axis=value" -> reason
  std::string reject_all;                     ///< non-empty: every preset fails with this reason
  std::map<std::string, int> measured;        ///< key -> times measured

  bench::TuneMeasurement operator()(const schedule::DecodePreset& p, const std::string& key) {
    ++measured[key];
    bench::TuneMeasurement m;
    const ordered_json knobs = bench::tune_preset_json(p);
    m.reason = reject_all;
    for (const auto& [what, reason] : reject)
      if (has(knobs, what)) m.reason = reason;
    if (!m.reason.empty()) return m;
    double ms = 10.0;
    for (const auto& [what, saved] : gain)
      if (has(knobs, what)) ms -= saved;
    m.ok = true;
    m.ms = {ms, 2 * ms};
    m.objective_ms = 3 * ms;
    return m;
  }
};

}  // namespace

TEST_CASE("tune search: the fastest checked value of each axis, adopted past min_gain", "[tools]") {
  const bench::TuneSpace space = space_of(
      R"({"tiles_per_stage": [1, 2, 3], "argmax_tiles_per_sm": [1, 0, 2], "lm_head_tiles_per_sm": [1, 2]})");
  FakeDevice dev;
  // argmax 0 is the fastest of its axis but by 0.01 of 9 ms (0.1%, under min_gain); argmax 2 is
  // slower than the incumbent. lm_head 2 saves 0.5 ms (5.6%).
  dev.gain = {{"tiles_per_stage=2", 1.0}, {"tiles_per_stage=3", 2.0}, {"argmax_tiles_per_sm=0", 0.01},
              {"argmax_tiles_per_sm=2", -0.3}, {"lm_head_tiles_per_sm=2", 0.5}};
  // The fastest tiles_per_stage fails its correctness check: it must never be picked.
  dev.reject = {{"tiles_per_stage=3", "correctness check failed at step 2: ..."}};
  bench::TuneSearchOptions o;
  o.min_gain = 0.005;
  auto measure = [&](const schedule::DecodePreset& p, const std::string& k) { return dev(p, k); };
  const bench::TuneSearchResult r = bench::tune_search(space, schedule::DecodePreset{}, key_of, measure, o);
  REQUIRE(r.best >= 0);
  const bench::TuneCandidate& best = r.candidates[static_cast<size_t>(r.best)];
  CHECK(best.preset.tiles_per_stage == 2);
  CHECK(best.preset.argmax_tiles_per_sm == 1);  // its faster value was under the bar
  CHECK(best.preset.lm_head_tiles_per_sm == 2);
  CHECK(best.m.objective_ms == Approx(3 * (10.0 - 1.0 - 0.5)));
  CHECK(best.label == "tiles_per_stage=2 lm_head_tiles_per_sm=2");
  CHECK(r.candidates[0].label == "default");
  CHECK(r.candidates[0].pass == 0);
  // Pass 1 adopted two values, pass 2 re-walked both axes and adopted nothing, so it stopped.
  CHECK(r.passes == 2);
  CHECK_FALSE(r.budget_exhausted);
  // Each distinct schedule was measured exactly once, however often the walk came back to it.
  for (const auto& [key, times] : dev.measured) CHECK(times == 1);
  bool saw_rejected = false;
  for (const bench::TuneCandidate& c : r.candidates)
    if (c.preset.tiles_per_stage == 3 && c.preset.argmax_tiles_per_sm == 1) {
      saw_rejected = true;
      CHECK_FALSE(c.m.ok);
      CHECK(c.m.reason == "correctness check failed at step 2: ...");
    }
  CHECK(saw_rejected);
}

TEST_CASE("tune search: a re-timing confirms a pick only past the same bar", "[tools]") {
  CHECK(bench::tune_gain_confirmed(10.0, 9.0, 0.005));
  CHECK_FALSE(bench::tune_gain_confirmed(10.0, 9.96, 0.005));  // 0.4%: noise
  CHECK_FALSE(bench::tune_gain_confirmed(10.0, 10.5, 0.005));  // the pick lost the re-timing
  CHECK(bench::tune_gain_confirmed(10.0, 9.96, 0.0));
  CHECK_FALSE(bench::tune_gain_confirmed(10.0, 10.0, 0.0));
}

TEST_CASE("tune search: noise below min_gain keeps the start", "[tools]") {
  const bench::TuneSpace space = space_of(R"({"tiles_per_stage": [1, 2]})");
  FakeDevice dev;
  dev.gain = {{"tiles_per_stage=2", 0.04}};  // 0.4% of 10 ms
  auto measure = [&](const schedule::DecodePreset& p, const std::string& k) { return dev(p, k); };
  bench::TuneSearchOptions o;
  o.min_gain = 0.005;
  bench::TuneSearchResult r = bench::tune_search(space, schedule::DecodePreset{}, key_of, measure, o);
  CHECK(r.best == 0);
  CHECK(r.candidates.size() == 2);
  CHECK(r.passes == 1);
  o.min_gain = 0.001;  // the same 0.4% is a gain past a 0.1% bar
  dev.measured.clear();
  r = bench::tune_search(space, schedule::DecodePreset{}, key_of, measure, o);
  REQUIRE(r.best == 1);
  CHECK(r.candidates[1].preset.tiles_per_stage == 2);
}

TEST_CASE("tune search: the candidate budget and a failed start", "[tools]") {
  const bench::TuneSpace space = space_of(R"({"tiles_per_stage": [1, 2, 3, 4], "lm_head_tiles_per_sm": [1, 2, 3]})");
  FakeDevice dev;
  dev.gain = {{"tiles_per_stage=4", 1.0}, {"lm_head_tiles_per_sm=3", 1.0}};
  auto measure = [&](const schedule::DecodePreset& p, const std::string& k) { return dev(p, k); };
  bench::TuneSearchOptions o;
  o.max_candidates = 3;
  bench::TuneSearchResult r = bench::tune_search(space, schedule::DecodePreset{}, key_of, measure, o);
  CHECK(r.budget_exhausted);
  CHECK(r.candidates.size() == 3);  // the start, tiles_per_stage 2 and 3; 4 was never measured
  CHECK(r.best == 0);

  dev.reject_all = "InvalidArgument: tiling.q_proj.N_tile: ...";
  dev.measured.clear();
  r = bench::tune_search(space, schedule::DecodePreset{}, key_of, measure, bench::TuneSearchOptions{});
  CHECK(r.best == -1);
  CHECK(r.candidates.size() == 1);  // nothing but the start was measured
  CHECK(r.passes == 0);
}

TEST_CASE("tune search: presets that lower to one schedule are measured once", "[tools]") {
  // kv_partitions 0 means "the preset's choice"; a key function that resolves it (as the real one,
  // the lowered ScheduleConfig, does) makes 0 and 1 the same candidate.
  const bench::TuneSpace space = space_of(R"({"kv_partitions": [0, 1, 2]})");
  FakeDevice dev;
  auto measure = [&](const schedule::DecodePreset& p, const std::string& k) { return dev(p, k); };
  const auto resolved_key = [](const schedule::DecodePreset& p) {
    schedule::DecodePreset q = p;
    if (q.kv_partitions == 0) q.kv_partitions = 1;
    return bench::tune_preset_json(q).dump();
  };
  const bench::TuneSearchResult r =
      bench::tune_search(space, schedule::DecodePreset{}, resolved_key, measure, bench::TuneSearchOptions{});
  CHECK(r.candidates.size() == 2);  // {0 == 1}, 2
  CHECK(dev.measured.size() == 2);
}
