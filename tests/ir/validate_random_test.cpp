// tests/ir/validate_random_test.cpp: validate() against the randomized simulate_adversarial
// (sound: a violation it finds means validate() rejected) on thousands of small random programs
// (seeded), with and without accumulating fold tasks. The exact, exhaustive cross-check is
// interleaving_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/validate.h"
#include "random_small_program.h"

using namespace amk::ir;

TEST_CASE("validate against simulate_adversarial on random programs", "[ir]") {
  std::mt19937_64 rng(777);
  int accepted = 0, rejected = 0, caught = 0;
  for (int i = 0; i < 3000; ++i) {
    const Program p = amk::testing::random_small_program(rng);
    const ValidationResult r = validate(p);
    const std::vector<std::string> found = simulate_adversarial(p, 16);
    INFO("program " << i << ": " << (found.empty() ? std::string("no violation") : found[0]) << "\n" << r.report());
    if (r.ok) REQUIRE(found.empty());
    if (!found.empty()) REQUIRE_FALSE(r.ok);
    (r.ok ? accepted : rejected) += 1;
    caught += found.empty() ? 0 : 1;
  }
  WARN("adversarial cross-check: " << accepted << " accepted (no violation seen in any), " << rejected
                                    << " rejected, of which the adversary caught " << caught);
  CHECK(caught > rejected * 3 / 4);
}

TEST_CASE("validate against simulate_adversarial on random programs with accumulates", "[ir]") {
  std::mt19937_64 rng(4242);
  int accepted = 0, rejected = 0, caught = 0, accepted_multi = 0;
  for (int i = 0; i < 3000; ++i) {
    const Program p = amk::testing::random_small_program(rng, true);
    const ValidationResult r = validate(p);
    const std::vector<std::string> found = simulate_adversarial(p, 16);
    INFO("program " << i << ": " << (found.empty() ? std::string("no violation") : found[0]) << "\n" << r.report());
    if (r.ok) REQUIRE(found.empty());
    if (!found.empty()) REQUIRE_FALSE(r.ok);
    (r.ok ? accepted : rejected) += 1;
    caught += found.empty() ? 0 : 1;
    int folds = 0;
    for (const Task& t : p.tasks) folds += t.params.get_string("recipe") == std::string("RMSNORM_MLP_FOLD") ? 1 : 0;
    accepted_multi += r.ok && folds >= 2 ? 1 : 0;
  }
  WARN("adversarial cross-check with accumulates: " << accepted << " accepted (" << accepted_multi
                                                    << " with two or more folds), " << rejected
                                                    << " rejected, of which the adversary caught " << caught);
  CHECK(caught > rejected * 3 / 4);
  CHECK(accepted_multi > 30);
}
