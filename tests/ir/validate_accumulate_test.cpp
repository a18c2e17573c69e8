// tests/ir/validate_accumulate_test.cpp: ACCUMULATE and the two fold recipes (docs/FOLD.md) in
// validate(): an accumulate is a read-modify-write that needs no order with another accumulate of
// the same bytes, and conflicts with everything else (race.accumulate, race.partial-wait with the
// all-join hint, race.unwritten-read, page.clobber, write.readonly); the flag's contract; the
// shapes of RMSNORM_MLP_FOLD and GEMV_ADD_COPY; GEMV_ADD_COPY's two outputs. Verdicts on the race
// programs are cross-checked against simulate_adversarial and the exhaustive interleaving oracle.
#include <catch2/catch.hpp>

#include <string>

#include "fold_programs.h"
#include "interleaving_oracle.h"
#include "ir/graph.h"
#include "ir/validate.h"
#include "ir/validate_expect.h"

using namespace amk::ir;
using amk::testing::expect_error;
using amk::testing::expect_ok;
using amk::testing::fold_program;
using amk::testing::fold_task;
using amk::testing::FoldJoin;
using amk::testing::interleaving_oracle;
using amk::testing::kFoldFlags;
using amk::testing::names_task;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

// The first error of `rule` whose message contains `text` (printing the report when none does).
Diagnostic error_with(const ValidationResult& r, const std::string& rule, const std::string& text) {
  INFO(r.report());
  for (const Diagnostic& d : r.errors)
    if (d.rule == rule && d.message.find(text) != std::string::npos) return d;
  FAIL("no " << rule << " error containing: " << text);
  return {};
}

bool names_buffer(const Diagnostic& d, int b) {
  for (BufferId id : d.buffers)
    if (id.value == b) return true;
  return false;
}

// validate(), the randomized adversary and the exhaustive oracle agree on the verdict.
void expect_judges_agree(const Program& p, bool ok) {
  const ValidationResult r = validate(p);
  INFO(r.report());
  CHECK(r.ok == ok);
  CHECK(simulate_adversarial(p, 64).empty() == ok);
  const auto v = interleaving_oracle(p);
  INFO(v.witness);
  CHECK(v.ok() == ok);
}

// Buffers 0..6 of fold_program: x, W_o, norm_w, w_mlp, h, h_mlp, y; tasks 0 embed, 1 o_proj,
// 2..4 mlp.t0..t2, 5 read (with three folds).
constexpr int kH = 4, kHMlp = 5, kRead = 5;

// A lone fold for shape checks: x [2, 8] -> h [2, 8] after h is written.
struct LoneFold {
  ProgramBuilder b;
  int x = b.input("x", {2, 8}), norm_w = b.weight("norm_w", {8}), w_mlp = b.weight("w_mlp", {4, 3, 8});
  int h = b.act("h", {2, 8});
  int c = b.counter("h ready");
  LoneFold() {
    b.copy("embed", x, h).signal(c);
    fold_task(b, "fold", x, norm_w, w_mlp, h, 1, 2).wait(c, 1);
  }
  Task& fold() { return b.program().tasks[1]; }
  Buffer& buf(int id) { return b.program().buffers[static_cast<size_t>(id)]; }
};

}  // namespace

TEST_CASE("accumulate: unordered folds into one F32 buffer, read after an all-join, are accepted", "[ir]") {
  for (int n_folds = 1; n_folds <= 3; ++n_folds) {
    INFO(n_folds << " folds");
    const Program p = fold_program(FoldJoin::All, n_folds);
    expect_ok(validate(p));
    CHECK(simulate_adversarial(p, 64).empty());
    const auto v = interleaving_oracle(p);
    INFO(v.witness);
    CHECK(v.ok());
    // The folds really run at the same time in some execution: the exemption is what accepts it.
    CHECK(v.accumulate_overlap == (n_folds > 1));
  }
}

TEST_CASE("accumulate: a reader after only some accumulates names the one it misses and the all-join", "[ir]") {
  const Program p = fold_program(FoldJoin::Some);
  const Diagnostic d = expect_error(validate(p), "race.accumulate");
  CHECK_THAT(d.message, Contains("task 5 (read) reads buffer 4 \"h\", which task 4 (mlp.t2) accumulates into"));
  CHECK_THAT(d.message, Contains("all-join (here counter 4 (\"mlp.t2\") >= 1"));
  CHECK(names_task(d, kRead));
  CHECK(names_task(d, 4));
  CHECK(names_buffer(d, kH));
  CHECK(validate(p).errors.size() == 1);  // mlp.t0 and mlp.t1 are waited for
  expect_judges_agree(p, false);
  // Missing the first accumulate instead of the last one: every member of the run is checked.
  Program q = p;
  q.tasks[kRead].waits = {Wait{CounterId(3), 1}, Wait{CounterId(4), 1}};
  const ValidationResult r = validate(q);
  const Diagnostic e = expect_error(r, "race.accumulate");
  CHECK(r.errors.size() == 1);
  CHECK_THAT(e.message, Contains("task 2 (mlp.t0)"));
  CHECK(names_task(e, 2));
  expect_judges_agree(q, false);
}

TEST_CASE("accumulate: a partial wait on the accumulates' counter is race.partial-wait with the all-join", "[ir]") {
  const Program p = fold_program(FoldJoin::Partial);
  const ValidationResult r = validate(p);
  const Diagnostic d = expect_error(r, "race.partial-wait");
  CHECK_THAT(d.message, Contains("task 5 (read) waits on counter 2 (\"mlp\") >= 2 of its 3 producers"));
  CHECK_THAT(d.message, Contains("race.accumulate on buffer 4 \"h\""));
  CHECK_THAT(d.message, Contains("all-join (here counter 2 (\"mlp\") >= 3"));
  CHECK(r.errors.size() == 3);  // none of the three is forced before the reader
  expect_judges_agree(p, false);
}

TEST_CASE("accumulate: a store after accumulates must wait for every one of them", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), nw = b.weight("norm_w", {8}), w = b.weight("w_mlp", {4, 3, 8});
  const int h = b.act("h", {1, 8});
  const int c0 = b.counter("h ready"), c1 = b.counter("a1"), c2 = b.counter("a2");
  b.copy("embed", x, h).signal(c0);
  fold_task(b, "a1", x, nw, w, h, 0, 2).wait(c0, 1).signal(c1);
  fold_task(b, "a2", x, nw, w, h, 2, 2).wait(c0, 1).signal(c2);
  auto store = b.copy("store", x, h).wait(c1, 1);
  const Program p = b.build();
  const Diagnostic d = expect_error(validate(p), "race.accumulate");
  CHECK_THAT(d.message, Contains("task 3 (store) writes buffer 3 \"h\" while task 2 (a2) may still accumulate into it"));
  CHECK_THAT(d.message, Contains("all-join"));
  expect_judges_agree(p, false);
  store.wait(c2, 1);
  expect_judges_agree(b.build(), true);
}

TEST_CASE("accumulate: an accumulate reads, so it must follow the write and the reads before it", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), nw = b.weight("norm_w", {8}), w = b.weight("w_mlp", {4, 3, 8});
  const int h = b.act("h", {1, 8}), y = b.output("y", {1, 8});
  const int c0 = b.counter("h ready"), c1 = b.counter("read"), c2 = b.counter("fold");
  b.copy("embed", x, h).signal(c0);
  auto fold = fold_task(b, "a1", x, nw, w, h, 0, 4).signal(c2);
  b.copy("final", h, y).wait(c2, 1);
  // Unordered with the writer: it may add to memory that holds no value yet.
  Diagnostic d = expect_error(validate(b.build()), "race.accumulate");
  CHECK_THAT(d.message, Contains("task 1 (a1) accumulates into buffer 3 \"h\" written by task 0 (embed), but nothing "
                                 "orders the accumulate after the write"));
  expect_judges_agree(b.build(), false);
  fold.wait(c0, 1);
  expect_judges_agree(b.build(), true);
  // A reader of the written value that the accumulate does not wait for.
  const int z = b.output("z", {1, 8});
  b.copy("peek", h, z).wait(c0, 1).signal(c1);
  d = expect_error(validate(b.build()), "race.accumulate");
  CHECK(names_task(d, 1));
  CHECK(names_task(d, 3));
  // Which of the two the walk meets first decides the wording; both say the pair is unordered.
  const bool before = d.message.find("task 1 (a1) accumulates into buffer 3 \"h\" while task 3 (peek) may still read it") !=
                      std::string::npos;
  const bool after = d.message.find("task 3 (peek) reads buffer 3 \"h\", which task 1 (a1) accumulates into") !=
                     std::string::npos;
  CHECK((before || after));
  expect_judges_agree(b.build(), false);
  fold.wait(c1, 1);
  expect_judges_agree(b.build(), true);
}

TEST_CASE("accumulate: nothing written before the accumulates is race.unwritten-read", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), nw = b.weight("norm_w", {8}), w = b.weight("w_mlp", {4, 3, 8});
  const int h = b.act("h", {1, 8}), y = b.output("y", {1, 8});
  const int c = b.counter("mlp");
  fold_task(b, "a1", x, nw, w, y, 0, 2).signal(c);
  fold_task(b, "a2", x, nw, w, y, 2, 2).wait(c, 1);  // even ordered: a1 had nothing to add to
  const Program p = b.build();
  const ValidationResult r = validate(p);
  const Diagnostic d = expect_error(r, "race.unwritten-read");
  CHECK_THAT(d.message, Contains("task 0 (a1) accumulates into buffer 4 \"y\" (IO_OUTPUT), which no task writes "
                                 "before it"));
  CHECK(r.errors.size() == 1);  // a2 adds to what a1 left: only a1 lacks a value
  expect_judges_agree(p, false);
  (void)h;
}

TEST_CASE("accumulate: into a WEIGHT, CONST or IO_INPUT is a write to a read-only kind", "[ir]") {
  for (BufferKind kind : {BufferKind::Weight, BufferKind::Const, BufferKind::IoInput}) {
    ProgramBuilder b;
    const int x = b.input("x", {1, 8}), nw = b.weight("norm_w", {8}), w = b.weight("w_mlp", {4, 3, 8});
    const int h = b.buffer("h", kind, {1, 8});
    fold_task(b, "fold", x, nw, w, h, 0, 4);
    const Diagnostic d = expect_error(validate(b.build()), "write.readonly");
    CHECK_THAT(d.message, Contains("task 0 (fold) writes buffer 3 \"h\" (" + std::string(buffer_kind_name(kind)) + ")"));
  }
}

TEST_CASE("accumulate: only two accumulates are exempt; a fold that also reads its output conflicts", "[ir]") {
  Program p = fold_program(FoldJoin::All);
  // Without ACCUMULATE mlp.t1 stores: a contract error, and its store races with the other two.
  p.tasks[3].params.set("flags", int64_t{7} << kFlagRecipeShift);
  ValidationResult r = validate(p);
  INFO(r.report());
  CHECK(error_with(r, "contract", "requires ACCUMULATE").tasks.size() == 1);
  bool race = false;
  for (const Diagnostic& d : r.errors) race |= d.rule.rfind("race.", 0) == 0 && names_task(d, 3);
  CHECK(race);
  // mlp.t1 reading h itself (plain) while mlp.t0 / mlp.t2 add into it.
  p = fold_program(FoldJoin::All);
  p.tasks[3].inputs[0] = BufferId(kH);
  r = validate(p);
  const Diagnostic d = expect_error(r, "race.accumulate");
  CHECK(names_task(d, 3));
  expect_judges_agree(p, false);
  p.tasks[3].inputs[0] = BufferId(kHMlp);
  expect_judges_agree(p, true);
}

TEST_CASE("accumulate: on a shared page an accumulate is a read and a write of its buffer", "[ir]") {
  // b is written, then accumulated; a shares b's page. Writing a before the accumulate completes
  // clobbers either the accumulate's input or a's value.
  ProgramBuilder pb;
  const int x = pb.input("x", {1, 8}), nw = pb.weight("norm_w", {8}), w = pb.weight("w_mlp", {4, 3, 8});
  const int a = pb.act("a", {1, 8}), bv = pb.act("b", {1, 8}), y = pb.output("y", {1, 8});
  const int c0 = pb.counter("b ready"), c1 = pb.counter("b accumulated"), c2 = pb.counter("a ready");
  pb.copy("write_b", x, bv).signal(c0);
  pb.page({a, bv}, 32);
  fold_task(pb, "acc_b", x, nw, w, bv, 0, 4).wait(c0, 1).signal(c1);
  auto write_a = pb.copy("write_a", x, a).wait(c0, 1).signal(c2);
  pb.copy("read_a", a, y).wait(c2, 1);
  const Diagnostic d = expect_error(validate(pb.build()), "page.clobber");
  CHECK(names_task(d, 1));
  CHECK(names_task(d, 2));
  expect_judges_agree(pb.build(), false);
  write_a.wait(c1, 1);
  expect_judges_agree(pb.build(), true);
  // The accumulate after a's use of the page: b's value is gone.
  ProgramBuilder qb;
  const int qx = qb.input("x", {1, 8}), qn = qb.weight("norm_w", {8}), qw = qb.weight("w_mlp", {4, 3, 8});
  const int qa = qb.act("a", {1, 8}), qbv = qb.act("b", {1, 8}), qy = qb.output("y", {1, 8}), qz = qb.output("z", {1, 8});
  const int d0 = qb.counter("b ready"), d1 = qb.counter("a ready"), d2 = qb.counter("a read"), d3 = qb.counter("acc");
  qb.copy("write_b", qx, qbv).signal(d0);
  qb.copy("write_a", qx, qa).wait(d0, 1).signal(d1);
  qb.copy("read_a", qa, qy).wait(d1, 1).signal(d2);
  fold_task(qb, "acc_b", qx, qn, qw, qbv, 0, 4).wait(d2, 1).signal(d3);
  qb.copy("read_b", qbv, qz).wait(d3, 1);
  qb.page({qa, qbv}, 32);
  const Diagnostic e = expect_error(validate(qb.build()), "page.clobber");
  CHECK_THAT(e.message, Contains("task 3 (acc_b) reads buffer 4 \"b\""));
  expect_judges_agree(qb.build(), false);
}

TEST_CASE("accumulate: the ACCUMULATE flag is required on RMSNORM_MLP_FOLD and refused elsewhere", "[ir]") {
  LoneFold f;
  expect_ok(validate(f.b.build()));
  f.fold().params.set("flags", int64_t{7} << kFlagRecipeShift);
  Diagnostic d = expect_error(validate(f.b.build()), "contract");
  CHECK_THAT(d.message, Contains("task 1 (fold): FUSED recipe RMSNORM_MLP_FOLD requires ACCUMULATE (16) in flags 458752"));
  f.fold().params.erase("flags");
  CHECK_THAT(expect_error(validate(f.b.build()), "params.required").message, Contains("\"flags\""));

  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8}), h = b.act("h", {1, 8});
  const int c = b.counter("h ready");
  b.copy("embed", x, h).signal(c);
  auto add = b.task(Opcode::Fused, "o_proj").in({x, w, h}).out({h}).tile(8, 0, 8).wait(c, 1)
                 .param("recipe", std::string("GEMV_ADD"));
  expect_ok(validate(b.build()));
  add.i("flags", kFlagAccumulate | int64_t{1} << kFlagRecipeShift);
  d = expect_error(validate(b.build()), "contract");
  CHECK_THAT(d.message, Contains("task 1 (o_proj): flags 65552 set ACCUMULATE (16), which only FUSED RMSNORM_MLP_FOLD "
                                 "accepts; FUSED GEMV_ADD stores its result"));
  CHECK(names_task(d, 1));
  b.gemv("q", x, w, h, 8, 0, 8).wait(c, 1).i("flags", kFlagAccumulate);
  b.program().tasks[1].params.set("flags", int64_t{1} << kFlagRecipeShift);
  d = expect_error(validate(b.build()), "contract");
  CHECK_THAT(d.message, Contains("task 2 (q): flags 16 set ACCUMULATE (16), which only FUSED RMSNORM_MLP_FOLD accepts; "
                                 "GEMV_TILE stores its result"));
}

TEST_CASE("accumulate: RMSNORM_MLP_FOLD shapes: x [rows, K], norm_w [K], w_mlp [I, 3, K], out F32 [rows, K]", "[ir]") {
  auto check = [](auto&& mutate, const char* rule, const std::string& text) {
    LoneFold f;
    mutate(f);
    const Diagnostic d = error_with(validate(f.b.build()), rule, text);
    CHECK(names_task(d, 1));
  };
  check([](LoneFold& f) { f.fold().params.set("K", int64_t{0}); }, "shape", "task 1 (fold): K = 0 must be >= 1");
  check([](LoneFold& f) { f.buf(f.x).shape = {2, 6}; }, "shape", "buffer 0 \"x\" has last dimension 6, expected 8 (K)");
  check([](LoneFold& f) { f.buf(f.norm_w).shape = {6}; }, "shape", "buffer 1 \"norm_w\" has numel 6, expected 8");
  check([](LoneFold& f) { f.buf(f.w_mlp).shape = {12, 8}; }, "shape",
        "buffer 2 \"w_mlp\" has rank 2, expected 3: w_mlp is [I, 3, K]");
  check([](LoneFold& f) { f.buf(f.w_mlp).shape = {4, 2, 8}; }, "shape",
        "buffer 2 \"w_mlp\" has middle dimension 2, expected 3");
  check([](LoneFold& f) { f.buf(f.w_mlp).shape = {4, 3, 6}; }, "shape",
        "buffer 2 \"w_mlp\" has last dimension 6, expected 8 (K: w_mlp is [I, 3, K])");
  check([](LoneFold& f) { f.fold().params.set("n_off", int64_t{-1}); }, "tile.bounds",
        "intermediate columns [-1, 1) are not inside the 4 (I) of buffer 2 \"w_mlp\"");
  check([](LoneFold& f) { f.fold().params.set("N_tile", int64_t{0}); }, "tile.bounds", "intermediate columns [1, 1)");
  check([](LoneFold& f) { f.fold().params.set("n_off", int64_t{3}); }, "tile.bounds",
        "intermediate columns [3, 5) are not inside the 4 (I)");
  check([](LoneFold& f) { f.buf(f.h).shape = {1, 16}; }, "shape", "buffer 3 \"h\" has rows 1, expected 2");
  check([](LoneFold& f) { f.buf(f.h).shape = {4, 4}; }, "shape", "buffer 3 \"h\" has last dimension 4, expected 8");
  check([](LoneFold& f) { f.buf(f.h).dtype = DType::BF16; }, "contract",
        "buffer 3 \"h\" is BF16, must be F32 (an ACCUMULATE output");
  // The tile's last columns, and x being anything with K columns (rows follow x).
  LoneFold f;
  f.fold().params.set("n_off", int64_t{2});
  expect_ok(validate(f.b.build()));
  LoneFold g;
  g.buf(g.h).dtype = DType::BF16;
  CHECK(names_buffer(expect_error(validate(g.b.build()), "contract"), g.h));
}

TEST_CASE("accumulate: GEMV_ADD_COPY has two outputs of one shape and GEMV_ADD's tile rules", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8}), h = b.act("h", {1, 8}), cp = b.act("h_mlp", {1, 8});
  const int wide = b.act("wide", {1, 16}), y = b.output("y", {1, 8}), z = b.output("z", {1, 8});
  const int c0 = b.counter("h ready"), c1 = b.counter("o_proj");
  b.copy("embed", x, h).signal(c0);
  auto o = b.task(Opcode::Fused, "o_proj").in({x, w, h}).out({h, cp}).tile(8, 0, 8).wait(c0, 1).signal(c1)
               .param("recipe", std::string("GEMV_ADD_COPY"));
  b.copy("read_h", h, y).wait(c1, 1);
  b.copy("read_copy", cp, z).wait(c1, 1);
  expect_ok(validate(b.build()));
  (void)wide;

  auto arity = [&](std::vector<int> outs, const std::string& text) {
    Program p = b.build();
    p.tasks[1].outputs.clear();
    for (int id : outs) p.tasks[1].outputs.push_back(BufferId(id));
    const Diagnostic d = expect_error(validate(p), "arity");
    CHECK_THAT(d.message, Contains(text));
    CHECK(names_task(d, 1));
    for (const Diagnostic& e : validate(p).errors) CHECK_THAT(e.message, !Contains("FUSED has 1 output"));
  };
  arity({h}, "task 1 (o_proj): FUSED recipe GEMV_ADD_COPY has 2 outputs, got 1");
  arity({h, cp, y}, "task 1 (o_proj): FUSED recipe GEMV_ADD_COPY has 2 outputs, got 3");
  {
    Program p = b.build();
    p.tasks[1].params.set("recipe", std::string("GEMV_ADD"));
    CHECK_THAT(expect_error(validate(p), "arity").message, Contains("task 1 (o_proj): FUSED recipe GEMV_ADD has 1 output, got 2"));
  }
  // The copy: the same shape as the output (its dtype may differ).
  b.program().buffers[static_cast<size_t>(cp)].dtype = DType::BF16;
  expect_ok(validate(b.build()));
  {
    Program p = b.build();
    p.tasks[1].outputs[1] = BufferId(wide);
    const Diagnostic d = expect_error(validate(p), "shape");
    CHECK_THAT(d.message, Contains("buffer 4 \"wide\" has shape [1, 16], expected [1, 8]"));
    CHECK(names_buffer(d, wide));
  }
  o.tile(8, 4, 8);  // GEMV_ADD's column tile rule
  CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message, Contains("tile cols [4, 12)"));
  o.tile(8, 0, 8);
  b.program().buffers[static_cast<size_t>(h)].shape = {1, 4};
  CHECK(expect_error(validate(b.build()), "shape").tasks.size() >= 1);
}

TEST_CASE("accumulate: FOLD checks the recipe's output count too", "[ir]") {
  LoneFold f;
  f.fold().outputs.push_back(BufferId(f.h));
  const Diagnostic d = expect_error(validate(f.b.build()), "arity");
  CHECK_THAT(d.message, Contains("task 1 (fold): FUSED recipe RMSNORM_MLP_FOLD has 1 output, got 2"));
}
