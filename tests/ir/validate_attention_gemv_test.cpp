// tests/ir/validate_attention_gemv_test.cpp: validate() and the access model on FUSED
// ATTENTION_GEMV_ADD (recipe 9): ROPE_ATTENTION over every head as the x of a GEMV_ADD tile. Its
// contract (ROPE_ATTENTION's decode-step flags, no PARTIAL_WRITE, K = n_heads * head_dim), both
// halves' operand shapes (W is input 6, the residual input 7), its footprint (q whole, W's tile
// rows, the residual and output tile) and ROPE_ATTENTION's exemption of its cache reads from the
// step's appends of row step.pos, which any other cache writer takes back.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "attention_gemv_programs.h"
#include "ir/access.h"
#include "ir/opspec.h"
#include "ir/validate.h"
#include "ir/validate_expect.h"

using namespace amk::ir;
using amk::testing::AttentionGemvLayer;
using amk::testing::expect_error;
using amk::testing::expect_ok;
using amk::testing::kAttentionGemvFlags;
using amk::testing::names_task;
using Catch::Contains;

namespace {

constexpr int kTile0 = 4, kTile1 = 5;  // the o_proj tiles' task ids in AttentionGemvLayer::standard()

// The error with `rule` whose message contains `text` (several errors may share a rule here).
Diagnostic expect_error_with(const ValidationResult& r, const std::string& rule, const std::string& text) {
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  for (const Diagnostic& d : r.errors)
    if (d.rule == rule && d.message.find(text) != std::string::npos) return d;
  FAIL("no " << rule << " error containing \"" << text << "\"");
  return {};
}

bool lists_buffer(const Diagnostic& d, int buffer) {
  for (BufferId id : d.buffers)
    if (id.value == buffer) return true;
  return false;
}

// The read of input `operand` (or write of output `operand`) in `all`; fails unless there is exactly one.
Access access_of(const std::vector<Access>& all, bool write, int operand) {
  const Access* found = nullptr;
  int n = 0;
  for (const Access& a : all)
    if (a.write == write && a.operand == operand) found = &a, ++n;
  INFO((write ? "output " : "input ") << operand);
  REQUIRE(n == 1);
  return *found;
}

}  // namespace

TEST_CASE("ATTENTION_GEMV_ADD: recipe 9 in the IR's table", "[ir]") {
  const RecipeSpec* r = recipe_find(int64_t{9});
  REQUIRE(r != nullptr);
  CHECK(r->recipe == FusedRecipe::AttentionGemvAdd);
  CHECK(r->name == "ATTENTION_GEMV_ADD");
  CHECK(recipe_find("ATTENTION_GEMV_ADD") == r);
  CHECK(r->inputs == kMaxInputs);
  CHECK(r->outputs == 1);
  CHECK(r->residual_input == 7);
  CHECK(r->weight_input == 6);
  CHECK(r->gemv);
  // The GEMV recipes name their W: what validate_shapes.cpp and access.cpp read.
  CHECK(recipe_find("GEMV_ADD")->weight_input == 1);
  CHECK(recipe_find("RMSNORM_GEMV")->weight_input == 2);
  CHECK(recipe_find("SILU_MUL_GEMV_ADD")->weight_input == 2);
}

TEST_CASE("validate: ATTENTION_GEMV_ADD tiles writing h in place beside the step's appends are accepted", "[ir]") {
  // Two o_proj tiles each recompute the attention and add disjoint columns of h; the appends of
  // cache row step.pos run unordered with them (the tiles read rows < step.pos and take row pos
  // from k_new / v_new).
  AttentionGemvLayer s;
  s.standard();
  const ValidationResult r = validate(s.b.build());
  expect_ok(r);
  INFO(r.report());
  CHECK(r.warnings.empty());
}

TEST_CASE("validate arity: ATTENTION_GEMV_ADD takes exactly 8 inputs and 1 output", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  SECTION("7 inputs (no residual)") {
    s.b.program().tasks[kTile0].inputs.pop_back();
    const Diagnostic d = expect_error(validate(s.b.build()), "arity");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): FUSED recipe ATTENTION_GEMV_ADD takes 8 inputs, got 7"));
  }
  SECTION("two outputs") {
    s.b.program().tasks[kTile1].outputs.push_back(BufferId(s.y));
    const Diagnostic d = expect_error(validate(s.b.build()), "arity");
    CHECK(names_task(d, kTile1));
    CHECK_THAT(d.message, Contains("task 5 (o.t1): FUSED recipe ATTENTION_GEMV_ADD has 1 output, got 2"));
  }
}

TEST_CASE("validate params: ATTENTION_GEMV_ADD requires the attention's and the tile's params", "[ir]") {
  for (const char* key : {"head_dim", "kv_start", "kv_len", "scale", "n_heads", "n_kv_heads", "flags", "K", "N_tile", "n_off"}) {
    AttentionGemvLayer s;
    s.standard();
    s.b.program().tasks[kTile0].params.erase(key);
    INFO(key);
    const Diagnostic d = expect_error_with(validate(s.b.build()), "params.required", "\"" + std::string(key) + "\"");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): FUSED recipe ATTENTION_GEMV_ADD requires param"));
  }
}

TEST_CASE("validate contract: ATTENTION_GEMV_ADD needs STEP_POS | STEP_KV and pos 0, and refuses PARTIAL_WRITE", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  Params& prm = s.b.program().tasks[kTile0].params;
  SECTION("without STEP_POS") {
    prm.set("flags", kAttentionGemvFlags & ~kFlagStepPos);
    const Diagnostic d = expect_error(validate(s.b.build()), "contract");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): FUSED ATTENTION_GEMV_ADD attends at the decode step: flags must set "
                                   "STEP_POS (4) and STEP_KV (8) and pos must be 0 (flags 8, pos 0)"));
  }
  SECTION("without STEP_KV") {
    prm.set("flags", kAttentionGemvFlags & ~kFlagStepKv);
    const Diagnostic d = expect_error(validate(s.b.build()), "contract");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("(flags 4, pos 0)"));
  }
  SECTION("pos 1") {
    prm.set("pos", int64_t{1});
    const Diagnostic d = expect_error(validate(s.b.build()), "contract");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("pos must be 0 (flags 12, pos 1)"));
  }
  SECTION("PARTIAL_WRITE") {
    prm.set("flags", kAttentionGemvFlags | kFlagPartialWrite);
    const Diagnostic d = expect_error(validate(s.b.build()), "contract");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): FUSED ATTENTION_GEMV_ADD takes no PARTIAL_WRITE (2) in flags 14"));
  }
  SECTION("another recipe's id in flags bits 16-31") {
    prm.set("flags", kFlagStepPos | kFlagStepKv | int64_t{6} << kFlagRecipeShift);
    CHECK_THAT(expect_error(validate(s.b.build()), "contract").message,
               Contains("flags bits 16-31 hold recipe id 6 but recipe ATTENTION_GEMV_ADD is 9"));
  }
  SECTION("without STEP_POS its cache reads are no longer exempt from the appends") {
    prm.set("flags", kAttentionGemvFlags & ~kFlagStepPos);
    const Diagnostic d = expect_error(validate(s.b.build()), "race.kv");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0) reads KV cache"));
  }
}

TEST_CASE("validate shape: ATTENTION_GEMV_ADD's GEMV half: K, W's width and rows, the tile, the residual", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  Program& p = s.b.program();
  SECTION("K is not n_heads * head_dim") {
    p.tasks[kTile0].params.set("K", int64_t{12});
    const ValidationResult r = validate(s.b.build());
    const Diagnostic d = expect_error_with(r, "shape", "K = 12");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): K = 12 must equal n_heads * head_dim = 16"));
    // W_o [8, 16] no longer matches K either.
    CHECK_THAT(expect_error_with(r, "shape", "W_o").message,
               Contains("task 4 (o.t0): buffer 11 \"W_o\" has last dimension 16, expected 12 (K: weights are [N_out, K])"));
  }
  SECTION("W of the wrong width") {
    p.buffers[static_cast<size_t>(s.wo)].shape = {8, 12};
    const Diagnostic d = expect_error(validate(s.b.build()), "shape");
    CHECK(names_task(d, kTile0));
    CHECK(lists_buffer(d, s.wo));
    CHECK_THAT(d.message, Contains("task 4 (o.t0): buffer 11 \"W_o\" has last dimension 12, expected 16 (K"));
  }
  SECTION("W with fewer rows than the output's columns") {
    p.buffers[static_cast<size_t>(s.wo)].shape = {6, 16};
    const ValidationResult r = validate(s.b.build());
    CHECK_THAT(expect_error_with(r, "shape", "N_out").message,
               Contains("buffer 1 \"h\" has last dimension 8, expected 6 (N_out, the rows of buffer 11 \"W_o\")"));
    // o.t1's rows [4, 8) are past W_o's 6.
    const Diagnostic d = expect_error(r, "tile.bounds");
    CHECK(names_task(d, kTile1));
    CHECK_THAT(d.message, Contains("task 5 (o.t1): tile rows [4, 8) of weight buffer 11 \"W_o\" exceed its 6 rows"));
  }
  SECTION("a tile past N") {
    p.tasks[kTile1].params.set("n_off", int64_t{6});
    const Diagnostic d = expect_error(validate(s.b.build()), "tile.bounds");
    CHECK(names_task(d, kTile1));
    CHECK_THAT(d.message, Contains("task 5 (o.t1): tile cols [6, 10) is not inside the 8 columns of buffer 1 \"h\""));
  }
  SECTION("a residual that does not match the output") {
    p.tasks[kTile0].inputs[7] = BufferId(s.q);
    const Diagnostic d = expect_error_with(validate(s.b.build()), "shape", "residual");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("buffer 5 \"q\" has numel 16, expected 8 (residual matches the output"));
  }
}

TEST_CASE("validate shape: ATTENTION_GEMV_ADD's attention half has ROPE_ATTENTION's operand rules", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  Program& p = s.b.program();
  SECTION("q is not n_heads * head_dim") {
    p.tasks[kTile0].params.set("n_heads", int64_t{2});
    const Diagnostic d = expect_error_with(validate(s.b.build()), "shape", "\"q\"");
    CHECK(names_task(d, kTile0));
    CHECK_THAT(d.message, Contains("buffer 5 \"q\" has numel 16, expected 8 (n_heads * head_dim)"));
  }
  SECTION("n_heads not a multiple of n_kv_heads") {
    p.tasks[kTile0].params.set("n_kv_heads", int64_t{3});
    CHECK_THAT(expect_error(validate(s.b.build()), "shape").message,
               Contains("task 4 (o.t0): head_dim 4, n_heads 4, n_kv_heads 3 must be >= 1 with n_heads a multiple"));
  }
  SECTION("k_new is not one cache row") {
    p.tasks[kTile0].inputs[3] = BufferId(s.q);
    CHECK_THAT(expect_error_with(validate(s.b.build()), "shape", "step's row").message,
               Contains("task 4 (o.t0): buffer 5 \"q\" has numel 16, expected 8 (the step's row"));
  }
  SECTION("inv_freq in BF16") {
    p.buffers[static_cast<size_t>(s.f)].dtype = DType::BF16;
    CHECK_THAT(expect_error(validate(s.b.build()), "contract").message,
               Contains("buffer 10 \"inv_freq\" is BF16, must be F32 (inv_freq table)"));
  }
  SECTION("the KV window past the cache") {
    p.tasks[kTile1].params.set("kv_len", int64_t{17});
    const Diagnostic d = expect_error(validate(s.b.build()), "shape");
    CHECK(names_task(d, kTile1));
    CHECK_THAT(d.message, Contains("KV window [0, 17) is not inside the 16 rows of buffer 8 \"k_cache\""));
  }
  SECTION("an output of more than one row") {
    // A standalone tile: h [2, 8] (no embed / q / k / v tasks to disagree with it).
    AttentionGemvLayer t;
    t.b.program().buffers[static_cast<size_t>(t.h)].shape = {2, 8};
    t.b.program().buffers[static_cast<size_t>(t.h)].kind = BufferKind::IoInput;
    const int out = t.b.output("out", {2, 8});
    t.b.task(Opcode::Fused, "o").in({t.q, t.kc, t.vc, t.kn, t.vn, t.f, t.wo, t.h}).out({out})
        .param("recipe", std::string("ATTENTION_GEMV_ADD")).i("head_dim", 4).i("n_heads", 4).i("n_kv_heads", 2)
        .i("kv_start", 0).i("kv_len", 16).param("scale", 0.5).i("flags", kAttentionGemvFlags).tile(16, 0, 8);
    const Diagnostic d = expect_error_with(validate(t.b.build()), "shape", "rows 2");
    CHECK(names_task(d, 0));
    CHECK_THAT(d.message, Contains("task 0 (o): buffer 13 \"out\" has rows 2, expected 1 (one row"));
  }
}

TEST_CASE("validate: ATTENTION_GEMV_ADD's output tile is its write footprint", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  s.b.program().tasks[kTile1].params.set("n_off", int64_t{2});  // cols [2, 6) against o.t0's [0, 4)
  // o.t1 reads its residual tile where o.t0 adds: the first conflict found is that read.
  const ValidationResult r = validate(s.b.build());
  const Diagnostic d = expect_error(r, "race.raw");
  CHECK(names_task(d, kTile0));
  CHECK(names_task(d, kTile1));
  CHECK_THAT(d.message, Contains("task 5 (o.t1) reads buffer 1 \"h\" cols [2, 4) written by task 4 (o.t0)"));
  CHECK(r.errors.size() == 1);  // cols [2, 4) only: the rest of the tiles are disjoint
}

TEST_CASE("validate: a writer of q unordered with the ATTENTION_GEMV_ADD tiles is a race", "[ir]") {
  // q_again rewrites q after q / k / v: the tiles read q whole, so it must wait for them.
  AttentionGemvLayer s;
  s.standard();
  const int q_in = s.b.input("q_in", {16});
  auto q_again = s.b.copy("q_again", q_in, s.q).wait(s.c_qkv, 3);  // task 9
  SECTION("unordered with them") {
    const Diagnostic d = expect_error(validate(s.b.build()), "race.war");
    CHECK(names_task(d, 9));
    CHECK((names_task(d, kTile0) || names_task(d, kTile1)));
    CHECK(lists_buffer(d, s.q));
    CHECK_THAT(d.message, Contains("buffer 5 \"q\""));
  }
  SECTION("ordered after them") {
    q_again.wait(s.c_o, 2);
    expect_ok(validate(s.b.build()));
  }
}

TEST_CASE("validate: a cache row before step.pos written beside ATTENTION_GEMV_ADD is race.kv", "[ir]") {
  SECTION("a STEP_POS append at pos -1 (row step.pos - 1)") {
    AttentionGemvLayer s;
    s.standard();
    s.b.program().tasks[7].params.set("pos", int64_t{-1});  // append_v
    const ValidationResult r = validate(s.b.build());
    const Diagnostic d = expect_error(r, "race.kv");
    CHECK((names_task(d, kTile0) || names_task(d, kTile1)));
    CHECK(names_task(d, 7));
    CHECK_THAT(d.message, Contains("reads KV cache buffer 9 \"v_cache\""));
    for (const Diagnostic& e : r.errors)
      if (e.rule == "race.kv") CHECK_FALSE(lists_buffer(e, s.kc));  // k_cache keeps only its step append
  }
  SECTION("a static-pos writer of the cache") {
    AttentionGemvLayer s;
    s.producers();
    s.o_tile("o.t0", 0, 4);  // task 4
    s.o_tile("o.t1", 4, 4);  // task 5
    s.rope_append_k();       // task 6
    const int c = s.b.counter("static v written");
    s.b.task(Opcode::KvAppend, "static_v").in({s.vn, s.vc}).out({s.vc}).i("pos", 5).wait(s.c_qkv, 3).signal(c);  // 7
    s.append_v().wait(c, 1);  // task 8, after static_v: only the tiles' order is missing
    s.b.copy("read", s.h, s.y).wait(s.c_o, 2);
    const ValidationResult r = validate(s.b.build());
    const Diagnostic d = expect_error(r, "race.kv");
    CHECK((names_task(d, kTile0) || names_task(d, kTile1)));
    CHECK_THAT(d.message, Contains("reads KV cache buffer 9 \"v_cache\""));
    for (const Diagnostic& e : r.errors) CHECK_FALSE(lists_buffer(e, s.kc));
  }
}

TEST_CASE("access: ATTENTION_GEMV_ADD reads q and the step inputs whole, W's tile rows, the residual tile", "[ir]") {
  AttentionGemvLayer s;
  s.standard();
  const Program p = s.b.build();
  const std::vector<Access> a = task_accesses(p, p.tasks[kTile1]);  // n_off 4, N_tile 4
  CHECK(a.size() == 9);
  CHECK(access_of(a, false, 0).region == (Region{0, 1, 0, 16}));  // q: every head
  CHECK(access_of(a, false, 1).region == (Region{0, 16, 0, 8}));  // k_cache, as ROPE_ATTENTION
  CHECK(access_of(a, false, 2).region == (Region{0, 16, 0, 8}));  // v_cache
  CHECK(access_of(a, false, 3).region == (Region{0, 1, 0, 8}));   // k_new
  CHECK(access_of(a, false, 4).region == (Region{0, 1, 0, 8}));   // v_new
  CHECK(access_of(a, false, 5).region == (Region{0, 1, 0, 2}));   // inv_freq
  CHECK(access_of(a, false, 6).region == (Region{4, 8, 0, 16}));  // W_o rows of the tile
  CHECK(access_of(a, false, 7).region == (Region{0, 1, 4, 8}));   // residual cols of the tile
  const Access w = access_of(a, true, 0);
  CHECK(w.region == (Region{0, 1, 4, 8}));
  CHECK(w.buffer.value == s.h);
  for (const Access& x : a) CHECK_FALSE(x.accumulate);
  SECTION("a mistyped n_off: every operand whole") {
    Task t = p.tasks[kTile1];
    t.params.set("n_off", 4.0);
    const std::vector<Access> whole = task_accesses(p, t);
    CHECK(access_of(whole, false, 6).region == (Region{0, 8, 0, 16}));
    CHECK(access_of(whole, true, 0).region == (Region{0, 1, 0, 8}));
  }
}
