// Which worker's queue each block of the persistent kernel runs (vm/cuda/block_workers.h): the
// AMK_BLOCK_WORKERS text becomes a permutation of the workers, and anything that is not one (a
// worker twice, one missing, out of range, malformed) is refused with the knob and the entry named.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "vm/cuda/block_workers.h"

using amk::vm::gpuvm::parse_block_workers;

TEST_CASE("block workers: identity, reverse and an explicit permutation", "[vm]") {
  auto id = parse_block_workers("identity", 4);
  REQUIRE(id.is_ok());
  CHECK(*id == std::vector<int32_t>{0, 1, 2, 3});
  auto rev = parse_block_workers("reverse", 4);
  REQUIRE(rev.is_ok());
  CHECK(*rev == std::vector<int32_t>{3, 2, 1, 0});
  auto list = parse_block_workers("2,0,3,1", 4);
  REQUIRE(list.is_ok());
  CHECK(*list == std::vector<int32_t>{2, 0, 3, 1});
  auto one = parse_block_workers("0", 1);
  REQUIRE(one.is_ok());
  CHECK(*one == std::vector<int32_t>{0});
}

TEST_CASE("block workers: anything but a permutation is refused, naming the entry", "[vm]") {
  struct Case {
    const char* text;
    const char* names;
  };
  const Case cases[] = {
      {"0,1,1", "worker 1 is named twice"},
      {"0,1", "2 entries for 3 blocks"},
      {"0,1,2,0", "4 entries for 3 blocks"},
      {"0,3,1", "block 1 names worker 3, outside [0, 3)"},
      {"0,-1,2", "entry 1 '-1' is not a worker index"},
      {"0,,2", "entry 1 '' is not a worker index"},
      {"0,1,2,", "entry 3 '' is not a worker index"},
      {"0,x,2", "entry 1 'x' is not a worker index"},
      {"1234567890,0,1", "entry 0 '1234567890' is not a worker index"},
      {"", "entry 0 '' is not a worker index"},
      {"Reverse", "entry 0 'Reverse' is not a worker index"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto r = parse_block_workers(c.text, 3);
    REQUIRE_FALSE(r.is_ok());
    const std::string msg = r.status().message();
    CHECK(msg.find("AMK_BLOCK_WORKERS=\"" + std::string(c.text) + "\"") != std::string::npos);
    CHECK(msg.find(c.names) != std::string::npos);
  }
}

TEST_CASE("block workers: a table from the API is checked the same way, naming its source", "[vm]") {
  using amk::vm::gpuvm::check_block_workers;
  CHECK(check_block_workers({1, 2, 0}, 3, "GpuOptions::block_workers").is_ok());
  struct Case {
    std::vector<int32_t> table;
    const char* names;
  };
  const Case cases[] = {
      {{0, 1}, "2 entries for 3 blocks"},
      {{0, 2, 2}, "worker 2 is named twice"},
      {{0, -1, 2}, "block 1 names worker -1, outside [0, 3)"},
      {{0, 1, 3}, "block 2 names worker 3, outside [0, 3)"},
  };
  for (const Case& c : cases) {
    INFO(c.names);
    const amk::Status s = check_block_workers(c.table, 3, "GpuOptions::block_workers");
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().rfind("GpuOptions::block_workers: ", 0) == 0);
    CHECK(s.message().find(c.names) != std::string::npos);
  }
}

TEST_CASE("block workers: the heaviest queues go to the fastest blocks, and nothing moves without a gain", "[vm]") {
  using amk::vm::gpuvm::match_blocks_to_queues;
  // Workers 1 and 3 carry wide tiles; blocks 0 and 2 landed on fast SMs.
  auto t = match_blocks_to_queues({100, 109, 100, 109}, {1.25, 1.0, 1.27, 1.0});
  REQUIRE(t.is_ok());
  CHECK(*t == std::vector<int32_t>{3, 0, 1, 2});  // block 2 (fastest) <- worker 1, block 0 <- worker 3
  // Equal loads (today's schedules) or equal speeds: the identity.
  auto same_load = match_blocks_to_queues({5, 5, 5}, {1.0, 1.3, 1.1});
  REQUIRE(same_load.is_ok());
  CHECK(*same_load == std::vector<int32_t>{0, 1, 2});
  auto same_speed = match_blocks_to_queues({1, 7, 3}, {2.0, 2.0, 2.0});
  REQUIRE(same_speed.is_ok());
  CHECK(*same_speed == std::vector<int32_t>{0, 1, 2});
  // Whatever the inputs, the result is a permutation the executor accepts.
  auto mixed = match_blocks_to_queues({3, 1, 4, 1, 5, 9, 2, 6}, {1.1, 1.0, 1.0, 1.3, 1.0, 1.2, 1.0, 1.0});
  REQUIRE(mixed.is_ok());
  CHECK(amk::vm::gpuvm::check_block_workers(*mixed, 8, "match").is_ok());
  CHECK((*mixed)[3] == 5);  // the fastest block runs the heaviest queue (load 9)
  CHECK((*mixed)[5] == 7);  // the second fastest the second heaviest (load 6)
  // Bad inputs are refused, naming what is wrong.
  auto sizes = match_blocks_to_queues({1, 2}, {1.0});
  REQUIRE_FALSE(sizes.is_ok());
  CHECK(sizes.status().message().find("2 queues for 1 blocks") != std::string::npos);
  auto zero = match_blocks_to_queues({1, 2}, {1.0, 0.0});
  REQUIRE_FALSE(zero.is_ok());
  CHECK(zero.status().message().find("block 1's speed") != std::string::npos);
  auto negative = match_blocks_to_queues({1, -2}, {1.0, 1.0});
  REQUIRE_FALSE(negative.is_ok());
  CHECK(negative.status().message().find("queue 1's load") != std::string::npos);
}
