// tests/ir/validate_rope_attention_test.cpp: validate() on FUSED ROPE_ATTENTION (recipe 6). Its
// cache reads cover rows before step.pos only (row pos comes from k_new / v_new), so it needs no
// order against appends that write rows >= step.pos (STEP_POS KV_APPEND / ROPE_APPEND, pos >= 0);
// any other writer of the cache brings race.kv back. Also its contract (the decode-step flags),
// its operand shapes, and ATTENTION_TILE's head tiles as its output footprint.
#include <catch2/catch.hpp>

#include <string>

#include "ir/program_builder.h"
#include "ir/validate.h"
#include "ir/validate_expect.h"

using namespace amk::ir;
using amk::testing::expect_error;
using amk::testing::expect_ok;
using amk::testing::names_task;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

constexpr int64_t kRopeAttentionRecipe = int64_t{6} << kFlagRecipeShift;
constexpr int64_t kRopeAppendRecipe = int64_t{5} << kFlagRecipeShift;
constexpr int64_t kStepFlags = kFlagStepPos | kFlagStepKv;

// One decode step of one layer: 4 q heads over 2 KV heads of head_dim 4, caches of 16 rows.
// Buffer ids: 0 q, 1 k_cache, 2 v_cache, 3 k_new, 4 v_new, 5 inv_freq, 6 attn.
struct DecodeStep {
  ProgramBuilder b;
  const int q = b.input("q", {16});
  const int kc = b.kv("k_cache", {16, 8});
  const int vc = b.kv("v_cache", {16, 8});
  const int kn = b.input("k_new", {8});
  const int vn = b.input("v_new", {8});
  const int f = b.buffer("inv_freq", BufferKind::Const, {2});
  const int o = b.output("attn", {16});

  // FUSED ROPE_ATTENTION over q heads [n_off, n_off + n_tile), the whole cache as its STEP_KV window.
  ProgramBuilder::TaskRef rope_attention(const std::string& label, int64_t n_off, int64_t n_tile) {
    return b.task(Opcode::Fused, label).in({q, kc, vc, kn, vn, f}).out({o}).param("recipe", std::string("ROPE_ATTENTION"))
        .i("head_dim", 4).i("n_heads", 4).i("n_kv_heads", 2).i("kv_start", 0).i("kv_len", 16).param("scale", 0.5)
        .i("n_off", n_off).i("N_tile", n_tile).i("pos", 0).i("flags", kStepFlags | kRopeAttentionRecipe);
  }
  // The same heads as a plain ATTENTION_TILE (which reads row pos from the cache).
  ProgramBuilder::TaskRef attention_tile(const std::string& label, int64_t n_off, int64_t n_tile) {
    return b.task(Opcode::AttentionTile, label).in({q, kc, vc}).out({o}).i("head_dim", 4).i("n_heads", 4)
        .i("n_kv_heads", 2).i("kv_start", 0).i("kv_len", 16).param("scale", 0.5).i("n_off", n_off).i("N_tile", n_tile)
        .i("flags", kFlagStepKv);
  }
  // The step's appends: k rotated into k_cache row step.pos, v into v_cache row step.pos.
  ProgramBuilder::TaskRef rope_append_k() {
    return b.task(Opcode::Fused, "rope_k").in({kn, f, kc}).out({kc}).param("recipe", std::string("ROPE_APPEND"))
        .i("head_dim", 4).i("pos", 0).i("flags", kFlagStepPos | kRopeAppendRecipe);
  }
  ProgramBuilder::TaskRef append_v() {
    return b.task(Opcode::KvAppend, "append_v").in({vn, vc}).out({vc}).i("pos", 0).i("flags", kFlagStepPos);
  }
};

bool lists_buffer(const Diagnostic& d, int buffer) {
  for (BufferId id : d.buffers)
    if (id.value == buffer) return true;
  return false;
}

}  // namespace

TEST_CASE("validate: ROPE_ATTENTION needs no order against the step's STEP_POS appends of its caches", "[ir]") {
  // The attention reads rows < step.pos and the appends write row step.pos: no shared byte, so
  // the two head tiles and both appends may all run at once.
  DecodeStep s;
  s.rope_attention("attn.h0", 0, 2);
  s.rope_attention("attn.h1", 2, 2);
  s.rope_append_k();
  s.append_v();
  expect_ok(validate(s.b.build()));
}

TEST_CASE("validate: a cache also written at a static pos brings race.kv back for ROPE_ATTENTION", "[ir]") {
  DecodeStep s;
  s.rope_attention("attn", 0, 4);  // task 0
  s.rope_append_k();               // task 1
  const int c = s.b.counter("static v written");
  s.b.task(Opcode::KvAppend, "static_v").in({s.vn, s.vc}).out({s.vc}).i("pos", 5).signal(c);  // task 2: row 5
  s.append_v().wait(c, 1);  // task 3, ordered after static_v: only the attention's order is missing
  const ValidationResult r = validate(s.b.build());
  const Diagnostic d = expect_error(r, "race.kv");
  CHECK(names_task(d, 0));
  CHECK_THAT(d.message, Contains("task 0 (attn) reads KV cache buffer 2 \"v_cache\""));
  // k_cache keeps only its STEP_POS writer: its reads stay exempt.
  for (const Diagnostic& e : r.errors) CHECK_FALSE(lists_buffer(e, s.kc));
}

TEST_CASE("validate: a STEP_POS append before the step row (pos < 0) is not exempt", "[ir]") {
  // pos -1 writes row step.pos - 1, which the attention reads (and is a shape error besides).
  DecodeStep s;
  s.rope_attention("attn", 0, 4);
  s.rope_append_k();
  s.append_v().i("pos", -1);
  const ValidationResult r = validate(s.b.build());
  const Diagnostic d = expect_error(r, "race.kv");
  CHECK(names_task(d, 0));
  CHECK_THAT(d.message, Contains("\"v_cache\""));
}

TEST_CASE("validate: a plain ATTENTION_TILE unordered with the step's appends is race.kv", "[ir]") {
  // ATTENTION_TILE reads cache row step.pos itself, so it must follow the appends.
  DecodeStep s;
  s.attention_tile("attn", 0, 4);  // task 0
  s.rope_append_k();               // task 1
  s.append_v();                    // task 2
  const ValidationResult r = validate(s.b.build());
  const Diagnostic d = expect_error(r, "race.kv");
  CHECK(names_task(d, 0));
  CHECK_THAT(d.message, Contains("task 0 (attn) reads KV cache"));
  CHECK(amk::testing::count_rule(r, "race.kv") >= 2);  // both caches
}

TEST_CASE("validate contract: ROPE_ATTENTION needs STEP_POS | STEP_KV and pos 0", "[ir]") {
  DecodeStep s;
  auto attn = s.rope_attention("attn", 0, 4);
  expect_ok(validate(s.b.build()));
  SECTION("without STEP_POS") {
    attn.i("flags", kFlagStepKv | kRopeAttentionRecipe);
    const Diagnostic d = expect_error(validate(s.b.build()), "contract");
    CHECK(names_task(d, 0));
    CHECK_THAT(d.message, Contains("task 0 (attn): FUSED ROPE_ATTENTION attends at the decode step"));
  }
  SECTION("without STEP_KV") {
    attn.i("flags", kFlagStepPos | kRopeAttentionRecipe);
    CHECK(names_task(expect_error(validate(s.b.build()), "contract"), 0));
  }
  SECTION("pos 1") {
    attn.i("pos", 1);
    CHECK_THAT(expect_error(validate(s.b.build()), "contract").message, Contains("pos must be 0"));
  }
  SECTION("without STEP_POS its cache reads are no longer exempt from the appends") {
    attn.i("flags", kFlagStepKv | kRopeAttentionRecipe);
    s.rope_append_k();
    s.append_v();
    CHECK(names_task(expect_error(validate(s.b.build()), "race.kv"), 0));
  }
}

TEST_CASE("validate shape: ROPE_ATTENTION's k_new / v_new rows, inv_freq, even head_dim", "[ir]") {
  DecodeStep s;
  s.rope_attention("attn", 0, 4);
  SECTION("k_new is not one cache row") {
    s.b.program().buffers[static_cast<size_t>(s.kn)].shape = {12};
    const Diagnostic d = expect_error(validate(s.b.build()), "shape");
    CHECK(names_task(d, 0));
    CHECK_THAT(d.message, Contains("task 0 (attn): buffer 3 \"k_new\" has numel 12, expected 8"));
  }
  SECTION("v_new is not one cache row") {
    s.b.program().buffers[static_cast<size_t>(s.vn)].shape = {4};
    CHECK_THAT(expect_error(validate(s.b.build()), "shape").message, Contains("buffer 4 \"v_new\" has numel 4, expected 8"));
  }
  SECTION("inv_freq holds head_dim / 2 F32 entries") {
    s.b.program().buffers[static_cast<size_t>(s.f)].shape = {4};
    CHECK_THAT(expect_error(validate(s.b.build()), "shape").message,
               Contains("buffer 5 \"inv_freq\" has numel 4, expected 2"));
  }
  SECTION("inv_freq in BF16") {
    s.b.program().buffers[static_cast<size_t>(s.f)].dtype = DType::BF16;
    CHECK_THAT(expect_error(validate(s.b.build()), "contract").message, Contains("buffer 5 \"inv_freq\" is BF16, must be F32"));
  }
  SECTION("an odd head_dim") {
    ProgramBuilder b;  // 2 heads of 3 over 1 KV head: every other operand fits
    const int q = b.input("q", {6}), kc = b.kv("k_cache", {16, 3}), vc = b.kv("v_cache", {16, 3});
    const int kn = b.input("k_new", {3}), vn = b.input("v_new", {3}), f = b.buffer("inv_freq", BufferKind::Const, {1});
    const int o = b.output("attn", {6});
    b.task(Opcode::Fused, "attn").in({q, kc, vc, kn, vn, f}).out({o}).param("recipe", std::string("ROPE_ATTENTION"))
        .i("head_dim", 3).i("n_heads", 2).i("n_kv_heads", 1).i("kv_start", 0).i("kv_len", 16).param("scale", 0.5)
        .i("pos", 0).i("flags", kStepFlags | kRopeAttentionRecipe);
    CHECK_THAT(expect_error(validate(b.build()), "shape").message, Contains("head_dim 3 must be even"));
  }
}

TEST_CASE("validate: ROPE_ATTENTION writes its head tile of the output, as ATTENTION_TILE", "[ir]") {
  DecodeStep s;
  s.rope_attention("attn.a", 0, 2);
  auto other = s.rope_attention("attn.b", 2, 2);
  SECTION("disjoint head tiles need no order") { expect_ok(validate(s.b.build())); }
  SECTION("overlapping head tiles race") {
    other.i("n_off", 1);  // heads [1, 3) against [0, 2): head 1, cols [4, 8)
    const Diagnostic d = expect_error(validate(s.b.build()), "race.waw");
    CHECK(names_task(d, 0));
    CHECK(names_task(d, 1));
    CHECK_THAT(d.message, Contains("buffer 6 \"attn\" cols [4, 8)"));
  }
}
