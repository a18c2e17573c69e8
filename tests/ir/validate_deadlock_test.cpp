// tests/ir/validate_deadlock_test.cpp: deadlock.cycle and queue.order witnesses (named hops,
// counters, SM queues), a 200000-task cycle (no recursion), and counter cycles that do not
// deadlock (partial waits on a shared counter), which the exact simulation accepts.
#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/validate.h"
#include "ir/program_builder.h"
#include "ir/validate_expect.h"

using namespace amk::ir;
using amk::testing::expect_error;
using amk::testing::expect_ok;
using amk::testing::find_rule;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {


}  // namespace

TEST_CASE("validate deadlock.cycle: two tasks waiting on each other", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4}), g = b.act("g", {4});
  const int ca = b.counter("a done"), cb = b.counter("b done");
  b.copy("a", x, h).signal(ca).wait(cb, 1);
  b.copy("b", x, g).signal(cb).wait(ca, 1);
  const ValidationResult r = validate(b.build());
  const Diagnostic& d = expect_error(r, "deadlock.cycle");
  CHECK_THAT(d.message, Contains("2 tasks can never run"));
  CHECK_THAT(d.message, Contains("task 0 (a) -> task 1 (b) -> task 0 (a)"));
  CHECK_THAT(d.message, Contains("task 0 (a) waits on counter 1 (\"b done\") >= 1 (it can only reach 0), which task 1 (b) signals"));
  CHECK(d.tasks.size() == 2);
  CHECK(d.counters.size() == 2);
  CHECK(simulate_counters(b.build()).stuck.size() == 2);
  // Break the cycle: b no longer waits.
  b.program().tasks[1].waits.clear();
  expect_ok(validate(b.build()));
}

TEST_CASE("validate deadlock.cycle: a task waiting on its own counter", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4});
  const int c = b.counter("self");
  b.copy("self", x, h).signal(c).wait(c, 1);
  CHECK_THAT(expect_error(validate(b.build()), "deadlock.cycle").message, Contains("task 0 (self) -> task 0 (self)"));
}

TEST_CASE("validate queue.order: an SM queue holding a task ahead of one it waits for", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4}), g = b.act("g", {4});
  const int ca = b.counter("a done"), cb = b.counter("b done");
  auto a = b.copy("consumer", h, g).signal(ca).wait(cb, 1).sm(0);
  auto p = b.copy("producer", x, h).signal(cb).sm(0);
  const Diagnostic& d = expect_error(validate(b.build()), "queue.order");
  CHECK_THAT(d.message, Contains("task 0 (consumer) -> task 1 (producer) -> task 0 (consumer)"));
  CHECK_THAT(d.message, Contains("task 1 (producer) is queued on sm 0 behind task 0 (consumer)"));
  // On different SMs the same DAG is fine.
  p.sm(1);
  expect_ok(validate(b.build()));
  (void)a;
}

TEST_CASE("validate queue.order: a cycle through two SM queues", "[ir]") {
  // sm0: [a1, a2], sm1: [b1, b2]; a1 waits on b2, b1 waits on a2: each queue blocks the other.
  ProgramBuilder b;
  const int x = b.input("x", {4});
  int out[4];
  for (int i = 0; i < 4; ++i) out[i] = b.act("o" + std::to_string(i), {4});
  const int ca2 = b.counter("a2"), cb2 = b.counter("b2");
  b.copy("a1", x, out[0]).wait(cb2, 1).sm(0);
  b.copy("a2", x, out[1]).signal(ca2).sm(0);
  b.copy("b1", x, out[2]).wait(ca2, 1).sm(1);
  b.copy("b2", x, out[3]).signal(cb2).sm(1);
  const Diagnostic& d = expect_error(validate(b.build()), "queue.order");
  CHECK_THAT(d.message, Contains("4 tasks can never run"));
  CHECK_THAT(d.message, Contains("is queued on sm 1 behind task 2 (b1)"));
  CHECK_THAT(d.message, Contains("is queued on sm 0 behind task 0 (a1)"));
}

TEST_CASE("validate deadlock.cycle: a 200000-task cycle is found without recursion", "[ir]") {
  constexpr int kN = 200000;
  ProgramBuilder b;
  const int x = b.input("x", {4});
  for (int i = 0; i < kN; ++i) b.counter();
  for (int i = 0; i < kN; ++i) b.task(Opcode::Nop, "t" + std::to_string(i)).signal(i).wait((i + 1) % kN, 1);
  (void)x;
  Program p = b.build();
  const Diagnostic& d = expect_error(validate(p), "deadlock.cycle");
  CHECK_THAT(d.message, Contains("200000 tasks can never run"));
  CHECK_THAT(d.message, Contains("task 0 (t0) -> task 1 (t1) -> "));
  CHECK_THAT(d.message, Contains("... (199989 more tasks) -> "));
  CHECK_THAT(d.message, Contains("task 199999 (t199999) -> task 0 (t0) ("));
  CHECK(d.message.size() < 4000);
  // The same chain without the closing edge is a 200000-deep DAG and is accepted.
  p.tasks[kN - 1].waits.clear();
  const ValidationResult ok = validate(p);
  expect_ok(ok);
  CHECK(ok.stats.critical_path == kN);
}

TEST_CASE("validate: a wait.unsatisfiable blocks its dependents without a false cycle", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {4}), h = b.act("h", {4}), g = b.act("g", {4});
  const int c0 = b.counter("c0"), c1 = b.counter("c1");
  b.copy("first", x, h).signal(c0).wait(c0, 5);
  b.copy("second", h, g).signal(c1).wait(c0, 1);
  const ValidationResult r = validate(b.build());
  CHECK_THAT(expect_error(r, "wait.unsatisfiable").message, Contains("task 0 (first) waits on counter 0 (\"c0\") >= 5"));
  CHECK(find_rule(r, "deadlock.cycle") == nullptr);
}

TEST_CASE("validate: a counter cycle that cannot deadlock is accepted (exact simulation)", "[ir]") {
  // A ticket chain on one counter: t_i waits c >= i-1 and signals c, so t1 -> t2 -> t3 are forced
  // in order; each reads its predecessor's output. The producer -> waiter graph has a cycle.
  ProgramBuilder b;
  const int x = b.input("x", {4});
  const int h1 = b.act("h1", {4}), h2 = b.act("h2", {4}), h3 = b.act("h3", {4}), y = b.output("y", {4});
  const int c = b.counter("tickets");
  b.copy("t1", x, h1).signal(c);
  b.copy("t2", h1, h2).signal(c).wait(c, 1);
  b.copy("t3", h2, h3).signal(c).wait(c, 2);
  auto last = b.copy("last", h3, y).wait(c, 3);
  const Program p = b.build();
  CHECK_FALSE(topological_order(p).has_value());
  expect_ok(validate(p));
  // Reading h3 after only 2 tickets is a real race (t3 may still be running).
  last.t().waits[0].threshold = 2;
  const ValidationResult r = validate(b.build());
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  const Diagnostic* d = find_rule(r, "race.partial-wait");
  REQUIRE(d != nullptr);
  CHECK_THAT(d->message, Contains("task 3 (last) waits on counter 0 (\"tickets\") >= 2 of its 3 producers"));
  CHECK_THAT(d->message, Contains("task 2 (t3)"));
}
