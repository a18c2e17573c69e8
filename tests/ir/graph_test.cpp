// tests/ir/graph_test.cpp: dependency_edges, topological_order, simulate_counters (with SM
// queues) and simulate_adversarial on hand-made programs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ir/graph.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

std::vector<int> ids(const std::vector<TaskId>& v) {
  std::vector<int> out;
  for (TaskId t : v) out.push_back(t.value);
  return out;
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& m) { return m.find(s) != std::string::npos; });
}

}  // namespace

TEST_CASE("graph: dependency edges join every producer to every waiter", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {4});
  const int c = b.counter("join");
  b.copy("p0", x, b.act("a", {4})).signal(c);
  b.copy("p1", x, b.act("b", {4})).signal(c);
  b.task(Opcode::Nop, "w0").wait(c, 2);
  b.task(Opcode::Nop, "w1").wait(c, 1);
  const Program p = b.build();
  auto e = dependency_edges(p);
  std::vector<std::pair<int, int>> got;
  for (auto [a, bb] : e) got.emplace_back(a.value, bb.value);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::pair<int, int>>{{0, 2}, {0, 3}, {1, 2}, {1, 3}});
  auto order = topological_order(p);
  REQUIRE(order.has_value());
  CHECK(ids(*order) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("graph: topological order by ids, and nullopt on a cycle", "[ir]") {
  ProgramBuilder b;
  const int c0 = b.counter(), c1 = b.counter();
  b.task(Opcode::Nop, "late").signal(c1).wait(c0, 1);
  b.task(Opcode::Nop, "early").signal(c0);
  Program p = b.build();
  auto order = topological_order(p);
  REQUIRE(order.has_value());
  CHECK(ids(*order) == std::vector<int>{1, 0});
  p.tasks[1].waits.push_back(Wait{CounterId(c1), 1});
  CHECK_FALSE(topological_order(p).has_value());
}

TEST_CASE("graph: simulate_counters respects SM queues and reports stuck tasks", "[ir]") {
  ProgramBuilder b;
  const int c0 = b.counter("c0");
  b.task(Opcode::Nop, "waiter").wait(c0, 1).sm(0);
  b.task(Opcode::Nop, "behind").sm(0);
  b.task(Opcode::Nop, "producer").signal(c0).sm(1);
  CounterSimulation s = simulate_counters(b.build());
  CHECK(ids(s.order) == std::vector<int>{2, 0, 1});
  CHECK(s.stuck.empty());
  // The producer queued behind its own waiter: both it and everything behind are stuck.
  b.program().tasks[2].sm = 0;
  s = simulate_counters(b.build());
  CHECK(s.order.empty());
  CHECK(ids(s.stuck) == std::vector<int>{0, 1, 2});
  // A threshold above the producer count is never met; a dangling counter never either.
  ProgramBuilder d;
  const int k = d.counter();
  d.task(Opcode::Nop, "p").signal(k);
  d.task(Opcode::Nop, "never").wait(k, 2);
  d.task(Opcode::Nop, "dangling").wait(17, 1);
  s = simulate_counters(d.build());
  CHECK(ids(s.order) == std::vector<int>{0});
  CHECK(ids(s.stuck) == std::vector<int>{1, 2});
}

TEST_CASE("graph: simulate_adversarial finds races and is silent on ordered programs", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8}), y = b.output("y", {8});
  const int c = b.counter("h");
  b.copy("writer", x, h).signal(c);
  auto reader = b.copy("reader", h, y);
  const auto found = simulate_adversarial(b.build(), 16);
  CHECK(any_contains(found, "task 1 (reader) reads buffer 1 \"h\""));
  reader.wait(c, 1);
  CHECK(simulate_adversarial(b.build(), 16).empty());
  // Deterministic: the same seeds give the same report.
  b.program().tasks[1].waits.clear();
  CHECK(simulate_adversarial(b.build(), 8) == simulate_adversarial(b.build(), 8));
}

TEST_CASE("graph: simulate_adversarial reports deadlocks, KV reads before the append, page clobbers", "[ir]") {
  SECTION("deadlock") {
    ProgramBuilder b;
    const int c = b.counter();
    b.task(Opcode::Nop, "self").signal(c).wait(c, 1);
    CHECK(any_contains(simulate_adversarial(b.build(), 2), "deadlock: 1 task(s) never ran, e.g. task 0 (self)"));
  }
  SECTION("KV") {
    ProgramBuilder b;
    const int n = b.input("k_new", {4}), kc = b.kv("k_cache", {8, 4}), y = b.output("y", {32});
    b.task(Opcode::KvAppend, "append").in({n, kc}).out({kc}).i("pos", 0);
    b.copy("reader", kc, y);
    CHECK(any_contains(simulate_adversarial(b.build(), 16), "task 1 (reader) reads KV cache buffer 1 \"k_cache\""));
  }
  SECTION("page clobber") {
    ProgramBuilder b;
    const int x = b.input("x", {8}), a = b.act("a", {8}), bb = b.act("b", {8}), y = b.output("y", {8}), z = b.output("z", {8});
    const int ca = b.counter(), cb = b.counter();
    b.copy("write_a", x, a).signal(ca);
    b.copy("write_b", x, bb).signal(cb).wait(ca, 1);
    b.copy("read_a", a, y).wait(cb, 1);
    b.copy("read_b", bb, z).wait(cb, 1);
    b.page({a, bb}, 32);
    CHECK(any_contains(simulate_adversarial(b.build(), 4), "task 2 (read_a) reads buffer 1 \"a\" after buffer 2 \"b\" overwrote"));
  }
}
