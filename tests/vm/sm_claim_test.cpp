// tests/vm/sm_claim_test.cpp: the queue claim of a kernel built with AMK_SM_CLAIM
// (vm/cuda/sm_claim.h), run on the CPU with real threads and std::atomic exchanges: however the
// blocks land (every one starting from any queue, several from the same one) and however their
// claims interleave, every block gets exactly one queue and no queue is run twice, launch after
// launch on the same claims. The device runs the same function over atomicExch.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "vm/cuda/sm_claim.h"

using amk::vm::gpuvm::claim_first_free;

namespace {

struct AtomicClaims {
  std::unique_ptr<std::atomic<uint32_t>[]> v;
  explicit AtomicClaims(int n) : v(new std::atomic<uint32_t>[static_cast<size_t>(n)]) {
    for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)].store(0);
  }
  uint32_t operator()(int w, uint32_t epoch) const { return v[static_cast<size_t>(w)].exchange(epoch); }
};

// One launch: n threads, thread b starting from first[b]; returns each one's worker.
std::vector<int> launch(const AtomicClaims& claims, uint32_t epoch, const std::vector<int>& first) {
  const int n = static_cast<int>(first.size());
  std::vector<int> got(first.size(), -2);
  std::atomic<int> ready{0};
  std::vector<std::thread> blocks;
  for (int b = 0; b < n; ++b)
    blocks.emplace_back([&, b] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();  // start together: contended claims
      got[static_cast<size_t>(b)] = claim_first_free(claims, epoch, first[static_cast<size_t>(b)], n);
    });
  for (std::thread& t : blocks) t.join();
  return got;
}

}  // namespace

TEST_CASE("SM claim: every block gets exactly one queue, launch after launch", "[vm][sm_balance]") {
  std::mt19937 rng(53);
  for (int n : {1, 2, 7, 32}) {
    AtomicClaims claims(n);
    for (uint32_t epoch = 1; epoch <= 30; ++epoch) {
      std::vector<int> first(static_cast<size_t>(n));
      // Ranked starts (a permutation), everyone on one queue, or random collisions.
      for (int b = 0; b < n; ++b)
        first[static_cast<size_t>(b)] = epoch % 3 == 0 ? (b * 5 + 3) % n : epoch % 3 == 1 ? 0 : static_cast<int>(rng() % n);
      const std::vector<int> got = launch(claims, epoch, first);
      CAPTURE(n, epoch);
      const std::set<int> distinct(got.begin(), got.end());
      CHECK(distinct.size() == static_cast<size_t>(n));
      CHECK(*distinct.begin() == 0);
      CHECK(*distinct.rbegin() == n - 1);
    }
  }
}

TEST_CASE("SM claim: a block keeps the queue ranked for its SM when no other block wants it", "[vm][sm_balance]") {
  AtomicClaims claims(4);
  const std::vector<int> got = launch(claims, 1, {2, 0, 3, 1});
  CHECK(got == std::vector<int>{2, 0, 3, 1});
}

TEST_CASE("SM claim: claims left holding the launch's epoch give no queue rather than a shared one", "[vm][sm_balance]") {
  AtomicClaims claims(3);
  for (int w = 0; w < 3; ++w) claims(w, 5);   // a launch of epoch 5 took all three
  CHECK(claim_first_free(claims, 5, 1, 3) == -1);  // epoch 5 again without zeroing: no queue
  CHECK(claim_first_free(claims, 6, 1, 3) == 1);   // the next epoch claims normally
}
