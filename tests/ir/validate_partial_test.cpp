// tests/ir/validate_partial_test.cpp: partial waits (first t of N producers) made exact:
// a consumer is ordered after exactly the tasks that every possible set of t producers needs.
#include <catch2/catch.hpp>

#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::find_rule;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

void expect_ok(const ValidationResult& r) {
  INFO(r.report());
  REQUIRE(r.ok);
}

Diagnostic expect_error(const ValidationResult& r, const std::string& rule) {
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  const Diagnostic* d = find_rule(r, rule);
  REQUIRE(d != nullptr);
  return *d;
}

// p1 writes a, p2 writes b, both signal c (2 producers); the consumer waits c >= 1.
struct TwoProducers {
  ProgramBuilder b;
  int x, a, bb, y, c;
  ProgramBuilder::TaskRef p1, p2, consumer;
  TwoProducers()
      : x(b.input("x", {8})), a(b.act("a", {8})), bb(b.act("b", {8})), y(b.output("y", {8})), c(b.counter("either")),
        p1(b.copy("p1", x, a).signal(c)), p2(b.copy("p2", x, bb).signal(c)),
        consumer(b.task(Opcode::Copy, "consumer").out({y}).wait(c, 1)) {}
};

}  // namespace

TEST_CASE("validate partial wait: t=1 of 2 reading nothing the producers write is fine", "[ir]") {
  TwoProducers t;
  t.consumer.in({t.x});
  expect_ok(validate(t.b.build()));
}

TEST_CASE("validate race.partial-wait: t=1 of 2 reading a producer's output", "[ir]") {
  TwoProducers t;
  t.consumer.in({t.a});
  const Diagnostic& d = expect_error(validate(t.b.build()), "race.partial-wait");
  CHECK_THAT(d.message, Contains("task 2 (consumer) waits on counter 0 (\"either\") >= 1 of its 2 producers"));
  CHECK_THAT(d.message, Contains("nothing orders it after task 0 (p1)"));
  REQUIRE(d.counters.size() == 1);
  CHECK(d.counters[0].value == t.c);
  // The all-join wait (t = N) orders it.
  t.consumer.t().waits[0].threshold = 2;
  expect_ok(validate(t.b.build()));
}

TEST_CASE("validate partial wait: a producer that must precede the other is forced", "[ir]") {
  SECTION("p2 waits on c itself, so p1 is the only way to reach 1") {
    TwoProducers t;
    t.p2.wait(t.c, 1);
    t.consumer.in({t.a});
    expect_ok(validate(t.b.build()));
    // p2's output is not forced: the consumer may run before p2.
    t.consumer.t().inputs[0] = BufferId(t.bb);
    CHECK_THAT(expect_error(validate(t.b.build()), "race.partial-wait").message, Contains("after task 1 (p2)"));
  }
  SECTION("p1 precedes p2 in one SM queue") {
    TwoProducers t;
    t.p1.sm(0);
    t.p2.sm(0);
    t.consumer.in({t.a});
    expect_ok(validate(t.b.build()));
    // In list order p2 first, p2 is the forced one and reading a races.
    std::swap(t.b.program().tasks[0], t.b.program().tasks[1]);
    CHECK_FALSE(validate(t.b.build()).ok);
  }
}

TEST_CASE("validate partial wait: a common ancestor of every producer is forced", "[ir]") {
  // root -> {p1, p2, p3} -> c; the consumer waits c >= 1 and reads root's output: whichever
  // producer arrives first, root finished before it.
  ProgramBuilder b;
  const int x = b.input("x", {8}), r = b.act("r", {8}), y = b.output("y", {8});
  const int cr = b.counter("root"), c = b.counter("any of three");
  b.copy("root", x, r).signal(cr);
  std::vector<int> outs;
  for (int i = 0; i < 3; ++i) {
    outs.push_back(b.act("p" + std::to_string(i), {8}));
    b.copy("p" + std::to_string(i), x, outs.back()).signal(c).wait(cr, 1);
  }
  auto consumer = b.copy("consumer", r, y).wait(c, 1);
  expect_ok(validate(b.build()));
  // If one producer does not descend from root, root is no longer forced.
  b.program().tasks[3].waits.clear();
  CHECK_THAT(expect_error(validate(b.build()), "race.partial-wait").message, Contains("after task 0 (root)"));
  (void)consumer;
}

TEST_CASE("validate partial wait: t=2 of 3 forces what two of any three share", "[ir]") {
  // p0 and p1 descend from a; p2 does not. Waiting c >= 2: any 2 of {p0, p1, p2} include p0 or
  // p1, so a is forced (it is in 2 of 3 ancestor sets, >= N - t + 1 = 2).
  ProgramBuilder b;
  const int x = b.input("x", {8}), av = b.act("a", {8}), y = b.output("y", {8});
  const int ca = b.counter("a"), c = b.counter("two of three");
  b.copy("a", x, av).signal(ca);
  for (int i = 0; i < 3; ++i) {
    auto p = b.copy("p" + std::to_string(i), x, b.act("o" + std::to_string(i), {8})).signal(c);
    if (i < 2) p.wait(ca, 1);
  }
  auto consumer = b.copy("consumer", av, y).wait(c, 2);
  expect_ok(validate(b.build()));
  consumer.t().waits[0].threshold = 1;  // {p2} alone may satisfy it
  CHECK_FALSE(validate(b.build()).ok);
}
