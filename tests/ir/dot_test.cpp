// tests/ir/dot_test.cpp: program_to_dot() on a small valid and a small rejected program: every
// task is a node colored by its opcode inside its SM's cluster, every dependency an edge, and a
// rejected program's offending tasks and edges are red while the others are not.
#include <catch2/catch.hpp>

#include <string>

#include "ir/dot.h"
#include "ir/validate.h"
#include "program_builder.h"

using namespace amk;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

/// x -> copy a (sm 0) -> copy b (sm 1) -> gemv c (sm 1), and an independent copy d (sm 0).
ir::Program chain() {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), h1 = b.act("h1", {1, 8}), h2 = b.act("h2", {1, 8});
  const int w = b.weight("w", {4, 8}), y = b.output("y", {1, 4}), z = b.output("z", {1, 8});
  const int c0 = b.counter("h1 done"), c1 = b.counter("h2 done");
  b.copy("a", x, h1).signal(c0).sm(0);
  b.copy("b", h1, h2).wait(c0, 1).signal(c1).sm(1);
  b.gemv("c", h2, w, y, 8, 0, 4).wait(c1, 1).sm(1);
  b.copy("d", x, z).sm(0);
  return b.build();
}

/// The attribute list of the line that starts with `prefix` ("  t0 -> t1 [" or "    t2 [").
std::string line_of(const std::string& dot, const std::string& prefix) {
  const size_t at = dot.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return dot.substr(at + 1, dot.find('\n', at + 1) - at - 1);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("dot: a valid program draws every task, cluster and dependency, nothing red", "[ir]") {
  const ir::Program p = chain();
  const ir::ValidationResult v = ir::validate(p);
  REQUIRE(v.ok);
  const std::string dot = ir::program_to_dot(p, &v, {"chain.json", 12});
  INFO(dot);
  CHECK(dot.rfind("digraph amk {", 0) == 0);
  CHECK_THAT(dot, Contains("chain.json: ACCEPTED, 4 tasks"));
  CHECK_THAT(dot, Contains("subgraph cluster_sm_0 {") && Contains("subgraph cluster_sm_1 {"));
  CHECK_THAT(line_of(dot, "    t2 ["), Contains("2: c\\nGEMV_TILE") &&
                                          Contains(ir::dot_opcode_color(ir::Opcode::GemvTile)));
  CHECK_THAT(line_of(dot, "    t0 ["), Contains(ir::dot_opcode_color(ir::Opcode::Copy)));
  CHECK(ir::dot_opcode_color(ir::Opcode::Copy) != ir::dot_opcode_color(ir::Opcode::GemvTile));
  // SM 1 holds b and c, not a.
  const std::string sm1 = dot.substr(dot.find("cluster_sm_1"), dot.find("  }", dot.find("cluster_sm_1")) - dot.find("cluster_sm_1"));
  CHECK_THAT(sm1, Contains("t1 [") && Contains("t2 ["));
  CHECK(sm1.find("t0 [") == std::string::npos);
  CHECK(count(dot, " -> ") == 2);
  CHECK_THAT(line_of(dot, "  t0 -> t1 ["), Contains("c0"));
  CHECK_THAT(line_of(dot, "  t1 -> t2 ["), Contains("c1"));
  CHECK(dot.find("red") == std::string::npos);
  CHECK(dot.find("diagnostics [") == std::string::npos);
}

TEST_CASE("dot: a rejected program has its offending tasks and edges in red", "[ir]") {
  // b and c wait on each other: a deadlock cycle b -> c -> b; a and d are innocent.
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), h1 = b.act("h1", {1, 8}), h2 = b.act("h2", {1, 8}), h3 = b.act("h3", {1, 8});
  const int z = b.output("z", {1, 8});
  const int c0 = b.counter("h1 done"), c1 = b.counter("h2 done"), c2 = b.counter("h3 done");
  b.copy("a", x, h1).signal(c0).sm(0);
  b.copy("b", h1, h2).wait(c0, 1).wait(c2, 1).signal(c1).sm(1);
  b.copy("c", h2, h3).wait(c1, 1).signal(c2).sm(2);
  b.copy("d", x, z).sm(0);
  const ir::Program p = b.build();
  const ir::ValidationResult v = ir::validate(p);
  REQUIRE_FALSE(v.ok);
  const std::string dot = ir::program_to_dot(p, &v, {"cycle.json", 12});
  INFO(dot);
  CHECK_THAT(dot, Contains("cycle.json: REJECTED"));
  CHECK_THAT(line_of(dot, "    t1 ["), Contains("color=red") && Contains("tooltip="));
  CHECK_THAT(line_of(dot, "    t2 ["), Contains("color=red"));
  CHECK(line_of(dot, "    t3 [").find("red") == std::string::npos);
  CHECK_THAT(line_of(dot, "  t1 -> t2 ["), Contains("color=red"));
  CHECK_THAT(line_of(dot, "  t2 -> t1 ["), Contains("color=red"));
  CHECK_THAT(dot, Contains("diagnostics [") && Contains(v.errors.front().rule));
}

TEST_CASE("dot: labels are escaped and broken references are skipped, not followed", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), y = b.output("y", {1, 8});
  b.copy("say \"hi\" \\ twice", x, y).wait(41, 1).sm(0);  // counter 41 does not exist
  const ir::Program p = b.build();
  const std::string dot = ir::program_to_dot(p, nullptr);
  CHECK_THAT(dot, Contains("say \\\"hi\\\" \\\\ twice"));
  CHECK(count(dot, " -> ") == 0);
  CHECK(dot.find("ACCEPTED") == std::string::npos);
}
