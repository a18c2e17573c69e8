// tests/ir/interleaving_oracle_test.cpp: validate() against the exhaustive interleaving oracle
// (interleaving_oracle.h) on 100,000 seeded random small programs, requiring zero disagreements in
// either direction, both on the verdict and on each kind of problem (deadlock, race, unproduced
// output), and on 30,000 more with accumulating fold tasks (docs/FOLD.md). validate() claims to be
// exact (docs/VALIDATION.md); a disagreement is a validator bug.
// First, hand-made programs show that the oracle itself tells each kind apart.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <random>

#include "interleaving_oracle.h"
#include "ir/validate.h"
#include "program_builder.h"
#include "random_small_program.h"

using namespace amk::ir;
using amk::testing::interleaving_oracle;
using amk::testing::OracleVerdict;
using amk::testing::ProgramBuilder;

namespace {

bool is_deadlock_rule(const std::string& r) {
  return r == "deadlock.cycle" || r == "queue.order" || r == "wait.unsatisfiable";
}
bool is_race_rule(const std::string& r) { return r.rfind("race.", 0) == 0 || r == "page.clobber"; }

}  // namespace

TEST_CASE("interleaving oracle: tells a safe chain from a deadlock, a race and an unproduced output", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), a = b.act("a", {1, 8}), y = b.output("y", {1, 8});
  const int c0 = b.counter("c0"), c1 = b.counter("c1");
  b.copy("load", x, a).signal(c0);
  b.copy("store", a, y).signal(c1).wait(c0, 1);
  const Program safe = b.build();
  const OracleVerdict ok = interleaving_oracle(safe);
  INFO(ok.witness);
  CHECK(ok.ok());
  CHECK(ok.states > 3);

  Program race = safe;
  race.tasks[1].waits.clear();  // store may read a before (or while) load writes it
  const OracleVerdict r = interleaving_oracle(race);
  CHECK(r.race);
  CHECK_FALSE(r.deadlock);

  Program dead = safe;
  dead.tasks[0].waits.push_back(Wait{CounterId(1), 1});  // load waits for store: a cycle
  const OracleVerdict d = interleaving_oracle(dead);
  CHECK(d.deadlock);
  CHECK_FALSE(d.race);

  ProgramBuilder pb;  // the store becomes a GEMV tile writing only columns [0, 4) of y
  const int px = pb.input("x", {1, 8}), pa = pb.act("a", {1, 8}), py = pb.output("y", {1, 8}), w = pb.weight("W", {8, 8});
  const int pc = pb.counter("c0");
  pb.copy("load", px, pa).signal(pc);
  pb.gemv("store", pa, w, py, 8, 0, 4).wait(pc, 1);
  const Program partial = pb.build();
  const OracleVerdict u = interleaving_oracle(partial);
  INFO(u.witness);
  CHECK(u.unproduced);
  CHECK_FALSE(u.race);
  CHECK_FALSE(u.deadlock);
}

TEST_CASE("validate agrees with the exhaustive interleaving oracle on 100,000 random small programs", "[ir]") {
  constexpr int kPrograms = 100000;
  std::mt19937_64 rng(20261121);
  int accepted = 0, rejected = 0;
  int64_t states = 0;
  std::map<std::string, int> by_rule;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kPrograms; ++i) {
    const Program p = amk::testing::random_small_program(rng);
    const ValidationResult r = validate(p);
    const OracleVerdict v = interleaving_oracle(p);
    states += v.states;
    bool deadlock = false, race = false, unproduced = false;
    for (const Diagnostic& d : r.errors) {
      deadlock |= is_deadlock_rule(d.rule);
      race |= is_race_rule(d.rule);
      unproduced |= d.rule == "output.unproduced";
      ++by_rule[d.rule];
    }
    (r.ok ? accepted : rejected) += 1;
    if (r.ok == v.ok() && deadlock == v.deadlock && race == v.race && (v.deadlock || unproduced == v.unproduced) &&
        (r.ok || deadlock || race || unproduced))
      continue;  // agreement, and every rejection has one of the three kinds (generated programs are well formed)
    FAIL("program " << i << " (seed 20261121): oracle says\n"
                    << (v.ok() ? std::string("no violation\n") : v.witness) << "validate() says\n"
                    << r.report());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string rules;
  for (const auto& [rule, n] : by_rule) rules += " " + rule + "=" + std::to_string(n);
  WARN(kPrograms << " programs (" << accepted << " accepted, " << rejected << " rejected), " << states << " oracle states, " << seconds << " s; errors:" << rules);
  CHECK(accepted > kPrograms / 10);  // a degenerate generator (all safe, or all broken) fails here
  CHECK(rejected > kPrograms / 10);
  for (const char* rule : {"race.raw", "race.war", "race.waw", "race.unwritten-read", "race.kv", "race.partial-wait",
                           "page.clobber", "deadlock.cycle", "queue.order", "output.unproduced"})
    CHECK(by_rule[rule] > 0);
}

TEST_CASE("validate agrees with the exhaustive interleaving oracle on 30,000 random programs with accumulates", "[ir]") {
  constexpr int kPrograms = 30000;
  std::mt19937_64 rng(20260717);
  int accepted = 0, rejected = 0, overlapping = 0;
  std::map<std::string, int> by_rule;
  for (int i = 0; i < kPrograms; ++i) {
    const Program p = amk::testing::random_small_program(rng, true);
    const ValidationResult r = validate(p);
    const OracleVerdict v = interleaving_oracle(p);
    bool deadlock = false, race = false, unproduced = false;
    for (const Diagnostic& d : r.errors) {
      deadlock |= is_deadlock_rule(d.rule);
      race |= is_race_rule(d.rule);
      unproduced |= d.rule == "output.unproduced";
      ++by_rule[d.rule];
    }
    (r.ok ? accepted : rejected) += 1;
    overlapping += r.ok && v.accumulate_overlap ? 1 : 0;
    if (r.ok == v.ok() && deadlock == v.deadlock && race == v.race && (v.deadlock || unproduced == v.unproduced) &&
        (r.ok || deadlock || race || unproduced))
      continue;
    FAIL("program " << i << " (seed 20260717, accumulates): oracle says\n"
                    << (v.ok() ? std::string("no violation\n") : v.witness) << "validate() says\n"
                    << r.report());
  }
  std::string rules;
  for (const auto& [rule, n] : by_rule) rules += " " + rule + "=" + std::to_string(n);
  WARN(kPrograms << " programs with accumulates (" << accepted << " accepted, " << overlapping
                 << " of them with accumulates in flight together), " << rejected << " rejected; errors:" << rules);
  // Fold stages add ordering to get right, so fewer programs are safe than without them (~10%).
  CHECK(accepted > kPrograms / 20);
  CHECK(rejected > kPrograms / 10);
  // Accepted programs whose accumulates really overlap: the exemption, not luck, accepted them.
  CHECK(overlapping > kPrograms / 100);
  for (const char* rule : {"race.accumulate", "race.unwritten-read", "race.partial-wait", "page.clobber"})
    CHECK(by_rule[rule] > 0);
}
