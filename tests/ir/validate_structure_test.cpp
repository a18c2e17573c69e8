// tests/ir/validate_structure_test.cpp: the structural rules of docs/VALIDATION.md (ids,
// references, versions, arity, caps, counters, waits, SM ranges, read-only writes, GPU label,
// report format). Each rule has a rejected program and a close variant that is accepted.
#include <catch2/catch.hpp>

#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk;
using namespace amk::ir;
using amk::testing::find_rule;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

// x (IO_INPUT) -load-> h (ACTIVATION) -store-> y (IO_OUTPUT): the smallest valid program.
struct Chain {
  ProgramBuilder b;
  int x, h, y, c0, c1;
  Chain() {
    x = b.input("x", {1, 8});
    h = b.act("h", {1, 8});
    y = b.output("y", {1, 8});
    c0 = b.counter("h ready");
    c1 = b.counter("y ready");
    b.copy("load", x, h).signal(c0);
    b.copy("store", h, y).signal(c1).wait(c0, 1);
  }
  Program build() { return b.build(); }
};

Diagnostic expect_error(const ValidationResult& r, const std::string& rule) {
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  const Diagnostic* d = find_rule(r, rule);
  REQUIRE(d != nullptr);
  return *d;
}

void expect_ok(const ValidationResult& r) {
  INFO(r.report());
  REQUIRE(r.ok);
  REQUIRE(r.errors.empty());
}

}  // namespace

TEST_CASE("validate: the base chain and an empty program are accepted", "[ir]") {
  Chain c;
  const ValidationResult r = validate(c.build());
  expect_ok(r);
  CHECK(r.report().rfind("ACCEPTED", 0) == 0);
  CHECK(r.stats.tasks == 2);
  CHECK(r.stats.edges == 1);
  CHECK(r.stats.critical_path == 2);
  CHECK(r.stats.unassigned_tasks == 2);
  expect_ok(validate(Program{}));
}

TEST_CASE("validate ids.dense: gaps, duplicates and negatives are clean errors", "[ir]") {
  SECTION("a gap in buffer ids") {
    Program p = Chain().build();
    p.buffers[1].id = BufferId(5);
    const ValidationResult r = validate(p);
    CHECK_THAT(expect_error(r, "ids.dense").message, Contains("buffer at entry 1 \"h\" has id 5"));
    bool missing = false;
    for (const Diagnostic& d : r.errors) missing |= d.message.find("buffer id 1 is missing") != std::string::npos;
    CHECK(missing);
  }
  SECTION("a duplicate task id") {
    Program p = Chain().build();
    p.tasks[1].id = TaskId(0);
    CHECK_THAT(expect_error(validate(p), "ids.dense").message, Contains("task at entry 1 (store) repeats id 0"));
  }
  SECTION("a negative counter id") {
    Program p = Chain().build();
    p.counters[0].id = CounterId(-3);
    CHECK_THAT(expect_error(validate(p), "ids.dense").message, Contains("counter at entry 0 (\"h ready\") has id -3"));
  }
  SECTION("dense ids in any order are accepted") {
    Program p = Chain().build();
    std::swap(p.buffers[0], p.buffers[2]);
    std::swap(p.counters[0], p.counters[1]);
    std::swap(p.tasks[0], p.tasks[1]);
    expect_ok(validate(p));
  }
}

TEST_CASE("validate ref.*: references to missing buffers, counters and pages", "[ir]") {
  SECTION("input buffer") {
    Program p = Chain().build();
    p.tasks[1].inputs[0] = BufferId(99);
    const Diagnostic& d = expect_error(validate(p), "ref.buffer");
    CHECK_THAT(d.message, Contains("task 1 (store): input 0 refers to buffer 99"));
    CHECK(amk::testing::names_task(d, 1));
  }
  SECTION("wait and out counters") {
    Program p = Chain().build();
    p.tasks[1].waits[0].counter = CounterId(42);
    p.tasks[0].out_counter = CounterId(-1);
    const ValidationResult r = validate(p);
    CHECK(amk::testing::count_rule(r, "ref.counter") == 2);
    CHECK_THAT(r.report(), Contains("error[ref.counter]: task 0 (load) signals counter -1, which does not exist"));
    CHECK_THAT(r.report(), Contains("error[ref.counter]: task 1 (store) waits on counter 42, which does not exist"));
    CHECK(find_rule(r, "analysis.skipped", true) != nullptr);
  }
  SECTION("a page binding to a missing page") {
    Chain c;
    c.b.page({c.h}, 32);
    Program p = c.build();
    p.pages->buffer_to_page[0].second = PageId(7);
    CHECK_THAT(expect_error(validate(p), "ref.page").message, Contains("buffer 1 \"h\" to page 7"));
  }
}

TEST_CASE("validate version: only the major component must match", "[ir]") {
  Program p = Chain().build();
  p.ir_version = "0.3.1";
  p.abi_version = "0.9";
  expect_ok(validate(p));
  p.ir_version = "1.0.0";
  CHECK_THAT(expect_error(validate(p), "version").message, Contains("ir_version \"1.0.0\""));
}

TEST_CASE("validate arity: opcode ranges and FUSED recipe input counts", "[ir]") {
  SECTION("COPY with two inputs") {
    Chain c;
    Program p = c.build();
    p.tasks[0].inputs.push_back(BufferId(c.x));
    CHECK_THAT(expect_error(validate(p), "arity").message, Contains("task 0 (load): COPY takes 1 inputs, got 2"));
  }
  SECTION("FUSED GEMV_ADD needs exactly 3 inputs") {
    ProgramBuilder b;
    const int x = b.input("x", {1, 8}), w = b.weight("w", {8, 8}), h = b.act("h", {1, 8});
    b.copy("init", x, h);
    auto t = b.task(Opcode::Fused, "oproj").in({x, w}).out({h}).wait(0, 1).tile(8, 0, 8).param("recipe", std::string("GEMV_ADD"));
    CHECK_THAT(expect_error(validate(b.build()), "arity").message, Contains("FUSED recipe GEMV_ADD takes 3 inputs, got 2"));
    t.in({h});
    expect_ok(validate(b.build()));
  }
}

TEST_CASE("validate caps: ABI limits on inputs, outputs, waits and rank", "[ir]") {
  SECTION("nine inputs") {
    ProgramBuilder b;
    const int x = b.input("x", {8}), y = b.act("y", {8});
    b.task(Opcode::AllreduceShard, "sum").in({x, x, x, x, x, x, x, x, x}).out({y});
    CHECK_THAT(expect_error(validate(b.build()), "caps").message, Contains("9 inputs, above the ABI maximum of 8"));
  }
  SECTION("nine waits, and eight are fine") {
    Chain c;
    for (int i = 0; i < 7; ++i) c.b.program().tasks[1].waits.push_back(Wait{CounterId(c.c0), 1});
    expect_ok(validate(c.build()));
    c.b.program().tasks[1].waits.push_back(Wait{CounterId(c.c0), 1});
    CHECK_THAT(expect_error(validate(c.build()), "caps").message, Contains("task 1 (store) has 9 waits"));
  }
  SECTION("rank 5") {
    Chain c;
    c.b.program().buffers[c.h].shape = {1, 1, 1, 1, 8};
    CHECK_THAT(expect_error(validate(c.build()), "caps").message, Contains("buffer 1 \"h\" has rank 5"));
  }
}

TEST_CASE("validate counter.init, wait.threshold, wait.unsatisfiable", "[ir]") {
  SECTION("counter init") {
    Program p = Chain().build();
    p.counters[0].init = 1;
    const Diagnostic& d = expect_error(validate(p), "counter.init");
    CHECK_THAT(d.message, Contains("counter 0 (\"h ready\") has init 1"));
    REQUIRE(d.counters.size() == 1);
  }
  SECTION("threshold below 1") {
    Program p = Chain().build();
    p.tasks[1].waits[0].threshold = 0;
    CHECK_THAT(expect_error(validate(p), "wait.threshold").message, Contains("task 1 (store) waits on counter 0"));
  }
  SECTION("threshold above the producer count") {
    Program p = Chain().build();
    p.tasks[1].waits[0].threshold = 2;
    const Diagnostic& d = expect_error(validate(p), "wait.unsatisfiable");
    CHECK_THAT(d.message, Contains("task 1 (store) waits on counter 0 (\"h ready\") >= 2, but only 1 task signal"));
  }
}

TEST_CASE("validate sm.range: negative and beyond the target", "[ir]") {
  Chain c;
  Program p = c.build();
  p.target = GpuTarget{};
  p.target->name = "toy";
  p.target->num_sms = 4;
  p.tasks[0].sm = 3;
  expect_ok(validate(p));
  p.tasks[0].sm = 4;
  CHECK_THAT(expect_error(validate(p), "sm.range").message, Contains("task 0 (load) is assigned to sm 4, but target \"toy\" has 4 SMs"));
  p.tasks[0].sm = -1;
  CHECK_THAT(expect_error(validate(p), "sm.range").message, Contains("sm -1"));
}

TEST_CASE("validate write.readonly: WEIGHT, CONST and IO_INPUT are never written", "[ir]") {
  Chain c;
  Program p = c.build();
  p.tasks[1].outputs[0] = BufferId(c.x);
  const Diagnostic& d = expect_error(validate(p), "write.readonly");
  CHECK_THAT(d.message, Contains("task 1 (store) writes buffer 0 \"x\" (IO_INPUT), which is read-only"));
  REQUIRE(d.buffers.size() == 1);
  CHECK(d.buffers[0].value == c.x);
}

TEST_CASE("validate onchip.sm: SMEM buffers stay on one assigned SM", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {8});
  const int s = b.buffer("s", BufferKind::Activation, {8}, DType::F32, MemSpace::Smem);
  const int y = b.output("y", {8});
  b.copy("put", x, s).signal(b.counter()).sm(0);
  auto get = b.copy("get", s, y).wait(0, 1).sm(0);
  expect_ok(validate(b.build()));
  get.sm(1);
  CHECK_THAT(expect_error(validate(b.build()), "onchip.sm").message,
             Contains("touched by task 0 (put) on sm 0 and task 1 (get) on sm 1"));
  get.t().sm.reset();
  CHECK_THAT(expect_error(validate(b.build()), "onchip.sm").message, Contains("task 1 (get), which touches it, has no sm"));
}

TEST_CASE("validate output.unproduced: every IO_OUTPUT element is written", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("w", {8, 8}), y = b.output("logits", {1, 8});
  b.gemv("lm.t0", x, w, y, 8, 0, 4);
  auto t1 = b.gemv("lm.t1", x, w, y, 8, 4, 2);
  CHECK_THAT(expect_error(validate(b.build()), "output.unproduced").message,
             Contains("buffer 2 \"logits\", cols [6, 8), is never written"));
  t1.i("N_tile", 4);
  expect_ok(validate(b.build()));
  ProgramBuilder none;
  none.output("out", {4});
  CHECK_THAT(expect_error(validate(none.build()), "output.unproduced").message, Contains("no task writes"));
}

TEST_CASE("validate target.label: meta.gpu must name the target (warning)", "[ir]") {
  Program p = Chain().build();
  p.target = GpuTarget{};
  p.target->name = "h100";
  p.target->num_sms = 132;
  p.meta["gpu"] = "h100";
  ValidationResult r = validate(p);
  expect_ok(r);
  CHECK(r.warnings.empty());
  p.meta["gpu"] = "rtx5090";
  r = validate(p);
  expect_ok(r);
  const Diagnostic* d = find_rule(r, "target.label", true);
  REQUIRE(d != nullptr);
  CHECK_THAT(d->message, Contains("\"rtx5090\""));
  CHECK_THAT(r.report(), Contains("warning[target.label]"));
}

TEST_CASE("validate report: verdict line, diagnostics, then stats", "[ir]") {
  Program p = Chain().build();
  p.counters[0].init = 2;
  p.tasks[0].sm = -1;
  const ValidationResult r = validate(p);
  const std::string text = r.report();
  CHECK(text.rfind("REJECTED: 2 errors\n", 0) == 0);
  CHECK_THAT(text, Contains("error[counter.init]: counter 0"));
  CHECK_THAT(text, Contains("error[sm.range]: task 0 (load)"));
  CHECK_THAT(text, Contains("stats: tasks=2 buffers=3 counters=2"));
}

TEST_CASE("validate caps each rule's listing and says how many it left out", "[ir]") {
  Chain c;
  for (int i = 0; i < 150; ++i) c.b.counter("extra");
  Program p = c.build();
  for (Counter& k : p.counters) k.init = 1;
  const ValidationResult r = validate(p);
  CHECK(amk::testing::count_rule(r, "counter.init") == 101);  // 100 listed + the closing line
  CHECK_THAT(r.errors.back().message, Contains("52 more counter.init diagnostics not listed (152 in all)"));
  CHECK(r.report().rfind("REJECTED: 152 errors", 0) == 0);
}
