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
