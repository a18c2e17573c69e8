// tests/vm/sm_balance_test.cpp: the host halves of the SM balancing (docs/SM_BALANCE.md), which
// need no GPU: per-SM speeds from a calibration's records (sm_speed.h) and the SmBalancer that
// turns a launch's recorded placement into the next launch's block -> worker table.
#include <catch2/catch.hpp>

#include <vector>

#include "vm/cuda/block_workers.h"
#include "vm/cuda/sm_speed.h"

using amk::vm::gpuvm::SmBalancer;
using amk::vm::gpuvm::sm_speeds_from_times;

TEST_CASE("SM speeds: each SM's median time over launches, against the median SM", "[vm][sm_balance]") {
  // Two launches of four blocks; the second puts blocks on other SMs. SM 2 is 1.25x as fast.
  const std::vector<std::vector<int32_t>> sm = {{0, 1, 2, 3}, {3, 2, 1, 0}};
  const std::vector<std::vector<uint64_t>> ns = {{1000, 1010, 800, 990}, {1000, 800, 1000, 1010}};
  const auto s = sm_speeds_from_times(sm, ns);
  REQUIRE(s.by_sm.size() == 4);
  // Medians per SM: 0 -> 1005, 1 -> 1005, 2 -> 800, 3 -> 995; the median SM: 1000.
  CHECK(s.by_sm[2] == Approx(1000.0 / 800.0));
  CHECK(s.by_sm[0] == Approx(1000.0 / 1005.0));
  CHECK(s.by_sm[3] == Approx(1000.0 / 995.0));
  CHECK(s.fast == 1);
  CHECK(s.fast_speed == Approx(1.25));
  // An SM no block ran on is unknown (0), and records without an SM or a time are left out.
  const auto gaps = sm_speeds_from_times({{0, -1, 5}}, {{1000, 500, 0}});
  REQUIRE(gaps.by_sm.size() == 1);
  CHECK(gaps.by_sm[0] == Approx(1.0));
  CHECK(gaps.fast == 0);
  CHECK(gaps.fast_speed == 1.0);
  CHECK(sm_speeds_from_times({}, {}).by_sm.empty());
}

TEST_CASE("SmBalancer: the heavy queues follow the fast SMs, and move only when the placement does",
          "[vm][sm_balance]") {
  SmBalancer bal;
  bal.queue_load = {10, 10, 30, 10};          // worker 2 is the heavy queue
  bal.speed_by_sm = {1.0, 1.0, 1.0, 1.0, 1.3};  // SM 4 is fast
  // First launch (identity table): blocks landed on SMs 7, 4, 5, 6 (worker b on block b).
  auto t = bal.observe({0, 1, 2, 3}, {7, 4, 5, 6});
  REQUIRE(t.is_ok());
  REQUIRE(t->size() == 4);
  CHECK((*t)[1] == 2);  // block 1 sits on SM 4: it runs the heavy queue
  CHECK(bal.moves == 1);
  // The next launch ran that table and the blocks stayed where they were: nothing to do.
  std::vector<int32_t> worker_sm(4);
  for (int b = 0; b < 4; ++b) worker_sm[static_cast<size_t>((*t)[static_cast<size_t>(b)])] = std::vector<int32_t>{7, 4, 5, 6}[static_cast<size_t>(b)];
  auto same = bal.observe(*t, worker_sm);
  REQUIRE(same.is_ok());
  CHECK(same->empty());
  CHECK(bal.moves == 1);
  // The blocks moved: block 3 is now on SM 4, so block 3 gets the heavy queue.
  std::vector<int32_t> moved_sm(4);
  const std::vector<int32_t> now = {7, 6, 5, 4};
  for (int b = 0; b < 4; ++b) moved_sm[static_cast<size_t>((*t)[static_cast<size_t>(b)])] = now[static_cast<size_t>(b)];
  auto moved = bal.observe(*t, moved_sm);
  REQUIRE(moved.is_ok());
  REQUIRE(moved->size() == 4);
  CHECK((*moved)[3] == 2);
  CHECK(bal.moves == 2);
  // A launch that recorded no SM for a worker (it did not run) changes nothing.
  auto none = bal.observe(*moved, {-1, 4, 5, 6});
  REQUIRE(none.is_ok());
  CHECK(none->empty());
  // Sizes that do not match are refused by name.
  auto bad = bal.observe({0, 1}, {0, 1});
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Matchers::Contains("SmBalancer"));
}

TEST_CASE("sm_first_queues: the heaviest queue first on the fastest SM id, the rest unranked", "[vm][sm_balance]") {
  // Three queues, the middle one heaviest; SM ids 0..4 with 3 the fastest, 1 unknown.
  const auto first = amk::vm::gpuvm::sm_first_queues({5, 9, 1}, {1.0, 0.0, 1.0, 1.3, 1.0}, 8);
  REQUIRE(first.size() == 8);
  CHECK(first[3] == 1);     // fastest SM, heaviest queue
  CHECK(first[0] == 0);     // then by SM id among equals: 0, 2, 4 get queues 0 and 2 in load order
  CHECK(first[2] == 2);
  CHECK(first[4] == 0xff);  // every queue already has an SM
  CHECK(first[1] == 0xff);  // no speed measured
  CHECK(first[7] == 0xff);  // no such SM
  // SM ids past max_sm_ids are left out.
  const auto small = amk::vm::gpuvm::sm_first_queues({1, 2}, {1.0, 1.0, 2.0}, 2);
  REQUIRE(small.size() == 2);
  CHECK(small[0] == 1);
  CHECK(small[1] == 0);
}
