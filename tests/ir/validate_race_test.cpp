// tests/ir/validate_race_test.cpp: the exact race rules (race.raw, race.war, race.waw,
// race.unwritten-read, race.kv) and the orderings amk must accept: write-after-read ordered,
// writers totally ordered by happens-before, disjoint column tiles under one shared counter.
#include <catch2/catch.hpp>

#include "ir/validate.h"
#include "ir/program_builder.h"
#include "ir/validate_expect.h"

using namespace amk::ir;
using amk::testing::expect_error;
using amk::testing::expect_ok;
using amk::testing::find_rule;
using amk::testing::names_task;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {


}  // namespace

TEST_CASE("validate race.raw: a read not ordered after its write", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), h = b.act("h_norm", {1, 8}), y = b.output("y", {1, 8});
  const int c = b.counter("h_norm ready");
  b.copy("l0.norm", x, h).signal(c);
  auto rd = b.copy("l0.q.t3", h, y);
  const Diagnostic& d = expect_error(validate(b.build()), "race.raw");
  CHECK_THAT(d.message, Contains("task 1 (l0.q.t3) reads buffer 1 \"h_norm\" written by task 0 (l0.norm)"));
  CHECK(names_task(d, 0));
  CHECK(names_task(d, 1));
  REQUIRE(d.buffers.size() == 1);
  CHECK(d.buffers[0].value == h);
  rd.wait(c, 1);
  expect_ok(validate(b.build()));
}

TEST_CASE("validate race.raw: ordering through a chain of counters and SM queues counts", "[ir]") {
  // writer -> (counter) mid -> (same SM queue) reader: transitively ordered.
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8}), m = b.act("m", {8}), y = b.output("y", {8});
  const int c = b.counter("h ready");
  b.copy("writer", x, h).signal(c).sm(0);
  b.copy("mid", x, m).wait(c, 1).sm(1);
  auto reader = b.copy("reader", h, y).sm(1);
  expect_ok(validate(b.build()));
  reader.sm(2);
  CHECK_THAT(expect_error(validate(b.build()), "race.raw").message, Contains("task 2 (reader) reads buffer 1 \"h\""));
}

TEST_CASE("validate race.war: a rewrite must follow every reader of the old value", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8}), y = b.output("y", {8}), z = b.output("z", {8});
  const int c0 = b.counter("h v1"), c1 = b.counter("read v1"), c2 = b.counter("h v2");
  b.copy("write1", x, h).signal(c0);
  b.copy("read1", h, y).signal(c1).wait(c0, 1);
  b.copy("write2", x, h).signal(c2).wait(c0, 1);
  b.copy("read2", h, z).wait(c2, 1);
  Program p = b.build();
  const Diagnostic& d = expect_error(validate(p), "race.war");
  CHECK_THAT(d.message, Contains("task 2 (write2) writes buffer 1 \"h\" while task 1 (read1) may still read it"));
  // Write-after-read ordered: write2 waits for the reader.
  p.tasks[2].waits[0] = Wait{CounterId(c1), 1};
  expect_ok(validate(p));
}

TEST_CASE("validate race.waw: two writers must be ordered by happens-before", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {8}), h = b.act("h", {8}), y = b.output("y", {8});
  const int c0 = b.counter("first"), c1 = b.counter("second");
  b.copy("first", x, h).signal(c0);
  auto second = b.copy("second", x, h).signal(c1);
  b.copy("use", h, y).wait(c0, 1).wait(c1, 1);
  const Diagnostic& d = expect_error(validate(b.build()), "race.waw");
  CHECK_THAT(d.message, Contains("task 0 (first) and task 1 (second) both write buffer 1 \"h\""));
  second.wait(c0, 1);  // totally ordered: accepted
  expect_ok(validate(b.build()));
}

TEST_CASE("validate: disjoint column tiles under one shared counter are fine, overlapping ones race", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 16}), w = b.weight("W", {16, 16}), q = b.act("q", {1, 16}), y = b.output("y", {1, 16});
  const int c = b.counter("q tiles");
  std::vector<ProgramBuilder::TaskRef> tiles;
  for (int i = 0; i < 4; ++i) tiles.push_back(b.gemv("l0.q.t" + std::to_string(i), x, w, q, 16, 4 * i, 4).signal(c).sm(i));
  b.copy("rope", q, y).wait(c, 4).sm(0);
  expect_ok(validate(b.build()));
  tiles[2].i("n_off", 6);  // cols [6, 10) overlaps tile 1's [4, 8)
  const Diagnostic& d = expect_error(validate(b.build()), "race.waw");
  CHECK_THAT(d.message, Contains("task 1 (l0.q.t1) and task 2 (l0.q.t2) both write buffer 2 \"q\" cols [6, 8)"));
}

TEST_CASE("validate: ATTENTION_COMBINE head tiles under one counter are fine, overlapping ones race", "[ir]") {
  // 4 heads of head_dim 2: partials [4 * 4], y [4 * 2]. Tiles of two heads each on two SMs.
  ProgramBuilder b;
  const int p0 = b.input("part0", {16}), p1 = b.input("part1", {16}), y = b.act("attn", {8}), o = b.output("o", {8});
  const int c = b.counter("combined");
  std::vector<ProgramBuilder::TaskRef> tiles;
  for (int i = 0; i < 2; ++i)
    tiles.push_back(b.task(Opcode::AttentionCombine, "l0.combine.h" + std::to_string(2 * i))
                        .in({p0, p1}).out({y}).i("head_dim", 2).i("n_heads", 4).i("n_off", 2 * i).i("N_tile", 2)
                        .signal(c).sm(i));
  b.copy("o_proj", y, o).wait(c, 2).sm(0);
  expect_ok(validate(b.build()));
  tiles[1].i("n_off", 1);  // heads [1, 3): y cols [2, 6) overlap tile 0's [0, 4)
  const Diagnostic& d = expect_error(validate(b.build()), "race.waw");
  CHECK_THAT(d.message, Contains("task 0 (l0.combine.h0) and task 1 (l0.combine.h2) both write buffer 2 \"attn\" cols [2, 4)"));
  tiles[1].i("n_off", 3);  // heads [3, 5) of 4
  CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message, Contains("heads [3, 5) are not inside the 4 heads"));
  tiles[1].i("n_off", 2);
  tiles[1].param("head_dim", std::string("two"));  // a tile's columns need head_dim and n_heads as integers
  CHECK_THAT(expect_error(validate(b.build()), "shape").message, Contains("needs head_dim and n_heads"));
}

TEST_CASE("validate: split-KV partitions write their own rows of stacked partials; the combine reads every row", "[ir]") {
  // 2 heads of head_dim 4 (rows of 2 * 6 partial values), one KV head, 4 partitions of 4 keys in
  // two stacked partials [2, 12]: partition j writes row j % 2 of stack j / 2; one combine.
  ProgramBuilder b;
  const int q = b.input("q", {8});
  const int kc = b.kv("k_cache", {16, 4}), vc = b.kv("v_cache", {16, 4});
  const int s0 = b.act("stack0", {2, 12}, DType::F32), s1 = b.act("stack1", {2, 12}, DType::F32);
  const int y = b.output("attn", {8});
  const int c = b.counter("partials");
  std::vector<ProgramBuilder::TaskRef> parts;
  for (int j = 0; j < 4; ++j)
    parts.push_back(b.task(Opcode::AttentionTile, "attn.p" + std::to_string(j))
                        .in({q, kc, vc}).out({j < 2 ? s0 : s1}).i("head_dim", 4).i("n_heads", 2).i("n_kv_heads", 1)
                        .i("kv_start", 4 * j).i("kv_len", 4).param("scale", 0.5).i("flags", kFlagPartialWrite)
                        .i("m_off", j % 2).signal(c).sm(j));
  b.task(Opcode::AttentionCombine, "combine").in({s0, s1}).out({y}).i("head_dim", 4).i("n_heads", 2).wait(c, 4).sm(0);
  expect_ok(validate(b.build()));
  parts[1].i("m_off", 0);  // partitions 0 and 1 both write row 0 of stack0
  const Diagnostic& d = expect_error(validate(b.build()), "race.waw");
  CHECK_THAT(d.message, Contains("task 0 (attn.p0) and task 1 (attn.p1) both write buffer 3 \"stack0\""));
  parts[1].i("m_off", 2);  // stack0 has two rows
  CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message, Contains("m_off 2 is not a row of buffer 3 \"stack0\""));
  parts[1].i("m_off", 1);
  // A row not of n_heads * (head_dim + 2) values: the kernels would write past it.
  const int wide = b.act("wide", {2, 16}, DType::F32);
  b.program().tasks[3].outputs[0] = BufferId(wide);
  CHECK_THAT(expect_error(validate(b.build()), "shape").message, Contains("stacks rows of n_heads * width"));
}

TEST_CASE("validate: SAMPLE_ARGMAX tiles write their own candidate slots; the combine reads them all", "[ir]") {
  // 10 logits in two tiles of 5 on two SMs, each writing its slot of cand[2], then the combine.
  ProgramBuilder b;
  const int l = b.input("logits", {10}), cand = b.act("cand", {2}, DType::I32);
  const int tok = b.output("tok", {1}, DType::I32);
  const int c = b.counter("candidates");
  std::vector<ProgramBuilder::TaskRef> tiles;
  for (int i = 0; i < 2; ++i)
    tiles.push_back(b.task(Opcode::SampleArgmax, "argmax.t" + std::to_string(i))
                        .in({l}).out({cand}).i("n_off", 5 * i).i("N_tile", 5).i("m_off", i).signal(c).sm(i));
  auto combine = b.task(Opcode::SampleArgmax, "argmax").in({l, cand}).out({tok}).wait(c, 2).sm(0);
  expect_ok(validate(b.build()));
  tiles[1].i("m_off", 0);  // both tiles write slot 0, and slot 1 stays unwritten
  const Diagnostic& d = expect_error(validate(b.build()), "race.waw");
  CHECK_THAT(d.message, Contains("task 0 (argmax.t0) and task 1 (argmax.t1) both write buffer 1 \"cand\" cols [0, 1)"));
  tiles[1].i("m_off", 2);
  CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message,
             Contains("candidate slot m_off 2 is not inside the 2 columns of buffer 1 \"cand\""));
  tiles[1].i("m_off", 1).i("n_off", 6);
  CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message,
             Contains("tile cols [6, 11) is not inside the 10 logits of buffer 0 \"logits\""));
  tiles[1].i("n_off", 5);
  combine.i("N_tile", 5);
  CHECK_THAT(expect_error(validate(b.build()), "contract").message, Contains("a SAMPLE_ARGMAX combine (two inputs) takes no N_tile"));
  b.program().tasks[2].params = Params{};
  b.program().tasks[2].waits[0].threshold = 1;  // the combine waits for one tile only
  CHECK_THAT(expect_error(validate(b.build()), "race.partial-wait").message,
             Contains("task 2 (argmax) waits on counter 0 (\"candidates\") >= 1 of its 2 producers") &&
                 Contains("buffer 1 \"cand\" cols [1, 2)"));
}

TEST_CASE("validate: an in-place residual update by disjoint GEMV_ADD tiles is fine", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), a = b.input("attn", {1, 8}), w = b.weight("Wo", {8, 8});
  const int h = b.act("h", {1, 8}), y = b.output("y", {1, 8});
  const int c0 = b.counter("h"), c1 = b.counter("o tiles");
  b.copy("embed", x, h).signal(c0);
  for (int i = 0; i < 2; ++i)
    b.task(Opcode::Fused, "o.t" + std::to_string(i)).in({a, w, h}).out({h}).wait(c0, 1).signal(c1)
        .param("recipe", std::string("GEMV_ADD")).tile(8, 4 * i, 4);
  b.copy("next", h, y).wait(c1, 2);
  expect_ok(validate(b.build()));
  b.program().tasks[2].params.set("n_off", int64_t{2});  // o.t1 now updates cols [2, 6), overlapping o.t0
  const Diagnostic& d = expect_error(validate(b.build()), "race.raw");
  CHECK_THAT(d.message, Contains("task 2 (o.t1) reads buffer 3 \"h\" cols [2, 4) written by task 1 (o.t0)"));
}

TEST_CASE("validate race.unwritten-read: transient data nobody wrote, including self-reads", "[ir]") {
  SECTION("never written") {
    ProgramBuilder b;
    const int h = b.act("h", {8}), y = b.output("y", {8});
    b.copy("reader", h, y);
    CHECK_THAT(expect_error(validate(b.build()), "race.unwritten-read").message,
               Contains("task 0 (reader) reads buffer 0 \"h\" (ACTIVATION), which no task writes"));
  }
  SECTION("a task reading what only it writes") {
    ProgramBuilder b;
    const int x = b.input("x", {8}), h = b.act("h", {8});
    auto t = b.task(Opcode::Add, "accumulate").in({h, x}).out({h});
    CHECK_THAT(expect_error(validate(b.build()), "race.unwritten-read").message,
               Contains("task 0 (accumulate) reads buffer 1 \"h\" (ACTIVATION), which only it writes"));
    // With an earlier, ordered writer the in-place update is fine.
    const int c = b.counter("init");
    b.copy("init", x, h).signal(c);
    t.wait(c, 1);
    std::swap(b.program().tasks[0], b.program().tasks[1]);
    expect_ok(validate(b.build()));
  }
  SECTION("an IO_OUTPUT read before its writer") {
    ProgramBuilder b;
    const int x = b.input("x", {8}), y = b.output("y", {8}), z = b.act("z", {8});
    const int c = b.counter("early");
    b.copy("early", y, z).signal(c);
    b.copy("late", x, y).wait(c, 1);
    CHECK_THAT(expect_error(validate(b.build()), "race.unwritten-read").message,
               Contains("task 0 (early) reads buffer 1 \"y\" (IO_OUTPUT) before any write to it: its writer task 1 (late)"));
  }
}

TEST_CASE("validate race.kv: readers of an appended cache come after the append", "[ir]") {
  // q [8] (2 heads x 4), k/v caches [16, 4] (1 kv head), attention over rows [0, 4).
  ProgramBuilder b;
  const int q = b.input("q", {8}), knew = b.input("k_new", {4});
  const int kc = b.kv("k_cache", {16, 4}), vc = b.kv("v_cache", {16, 4}), o = b.output("attn", {8});
  const int c = b.counter("kv appended");
  auto append = b.task(Opcode::KvAppend, "kv_append").in({knew, kc}).out({kc}).i("pos", 3).signal(c);
  auto attn = b.task(Opcode::AttentionTile, "attn").in({q, kc, vc}).out({o}).i("head_dim", 4).i("kv_start", 0)
                  .i("kv_len", 4).param("scale", 0.5).i("n_heads", 2).i("n_kv_heads", 1);
  SECTION("unordered read") {
    const Diagnostic& d = expect_error(validate(b.build()), "race.kv");
    CHECK_THAT(d.message, Contains("task 1 (attn) reads KV cache buffer 2 \"k_cache\", which task 0 (kv_append) appends"));
  }
  SECTION("read ordered after the append; the unappended v cache needs no order") {
    attn.wait(c, 1);
    expect_ok(validate(b.build()));
  }
  SECTION("KV read before append, even when ordered before it") {
    const int ca = b.counter("attn done");
    attn.signal(ca);
    append.wait(ca, 1);
    std::swap(b.program().tasks[0], b.program().tasks[1]);
    const Diagnostic& d = expect_error(validate(b.build()), "race.kv");
    CHECK_THAT(d.message, Contains("task 1 (attn) reads KV cache buffer 2 \"k_cache\", which task 0 (kv_append) appends this pass"));
  }
}

TEST_CASE("validate: K tiles read whole by W readers (reader groups) are checked reader by reader", "[ir]") {
  // 8 column tiles of `att` join on one counter; 6 readers read att whole. A reader group is checked
  // at once when every member joins the tiles' counter, else member by member.
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8}), att = b.act("att", {1, 8});
  const int c = b.counter("att tiles"), d = b.counter("readers done");
  for (int i = 0; i < 8; ++i) b.gemv("attn.h" + std::to_string(i), x, w, att, 8, i, 1).signal(c);
  std::vector<ProgramBuilder::TaskRef> readers;
  for (int i = 0; i < 6; ++i) readers.push_back(b.gemv("o.t" + std::to_string(i), att, w, b.act("o" + std::to_string(i), {1, 8}), 8, 0, 8).signal(d).wait(c, 8));
  auto rewrite = b.copy("rewrite", x, att).wait(d, 6);
  expect_ok(validate(b.build()));

  SECTION("a member ordered only through another reader is fine") {
    const int e = b.counter("o.t0 done");
    readers[0].t().out_counter = CounterId(e);
    readers[1].t().waits = {Wait{CounterId(e), 1}};  // after o.t0, hence after the tiles
    rewrite.wait(e, 1);
    rewrite.t().waits[0].threshold = 5;
    expect_ok(validate(b.build()));
  }
  SECTION("a member without the wait races with every tile") {
    readers[3].t().waits.clear();
    const ValidationResult r = validate(b.build());
    const Diagnostic d0 = expect_error(r, "race.raw");
    CHECK_THAT(d0.message, Contains("task 11 (o.t3) reads buffer 2 \"att\" cols [0, 1) written by task 0 (attn.h0)"));
    CHECK(amk::testing::count_rule(r, "race.raw") == 8);
  }
  SECTION("a rewrite not ordered after one member of the group") {
    readers[5].t().out_counter = CounterId(b.counter("late"));
    rewrite.t().waits[0].threshold = 5;
    CHECK_THAT(expect_error(validate(b.build()), "race.war").message,
               Contains("task 14 (rewrite) writes buffer 2 \"att\" cols [0, 1) while task 13 (o.t5) may still read it"));
  }
}
