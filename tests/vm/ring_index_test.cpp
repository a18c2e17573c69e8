// RingIndex (vm/cuda/ring_index.h): stepping through a ring gives every item the slot and lap
// that dividing would, for every ring size the kernel allows, and before() undoes a step.
#include <catch2/catch.hpp>

#include "vm/cuda/ring_index.h"

using amk::vm::gpuvm::RingIndex;

TEST_CASE("RingIndex steps through n % size and n / size", "[vm][ring]") {
  for (int32_t size = 1; size <= 8; ++size) {
    RingIndex at = RingIndex::of(0, size);
    for (int32_t n = 0; n < 5000; ++n) {
      INFO("size " << size << " item " << n);
      REQUIRE(at.slot == n % size);
      REQUIRE(at.lap == static_cast<uint32_t>(n / size));
      const RingIndex of = RingIndex::of(n, size);
      REQUIRE((of.slot == at.slot && of.lap == at.lap));
      RingIndex next = at;
      next.step(size);
      const RingIndex back = next.before(size);
      REQUIRE((back.slot == at.slot && back.lap == at.lap));
      at = next;
    }
  }
}

TEST_CASE("RingIndex starts a walk anywhere", "[vm][ring]") {
  RingIndex at = RingIndex::of(1234567, 3);
  CHECK(at.slot == 1);
  CHECK(at.lap == 411522u);
  at.step(3);
  CHECK(at.slot == 2);
  at.step(3);
  CHECK((at.slot == 0 && at.lap == 411523u));
}
