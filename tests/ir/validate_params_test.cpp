// tests/ir/validate_params_test.cpp: params.required, params.type, params.unknown, shape,
// tile.bounds and contract (docs/OPCODES.md), each with an accepted variant.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

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


// x [1, 16] (IO_INPUT), W [32, 16], y [1, 32] (IO_OUTPUT) written by one GEMV tile of all 32 cols.
struct Gemv {
  ProgramBuilder b;
  int x, w, y;
  ProgramBuilder::TaskRef t;
  Gemv()
      : x(b.input("x", {1, 16})), w(b.weight("W", {32, 16})), y(b.output("y", {1, 32})),
        t(b.gemv("lm.t0", x, w, y, 16, 0, 32)) {}
};

}  // namespace

TEST_CASE("validate params.required: opcode and FUSED recipe params", "[ir]") {
  Gemv g;
  expect_ok(validate(g.b.build()));
  g.t.t().params.erase("n_off");
  CHECK_THAT(expect_error(validate(g.b.build()), "params.required").message,
             Contains("task 0 (lm.t0): GEMV_TILE requires param \"n_off\""));

  ProgramBuilder b;
  const int x = b.input("x", {16}), w = b.weight("W", {8, 16}), r = b.input("r", {8}), y = b.output("y", {8});
  auto f = b.task(Opcode::Fused, "oproj").in({x, w, r}).out({y}).param("recipe", std::string("GEMV_ADD")).i("N_tile", 8).i("n_off", 0);
  CHECK_THAT(expect_error(validate(b.build()), "params.required").message,
             Contains("FUSED recipe GEMV_ADD requires param \"K\""));
  f.i("K", 16);
  expect_ok(validate(b.build()));
}

TEST_CASE("validate params.type: int32 params are integers, reals are finite, recipes exist", "[ir]") {
  Gemv g;
  SECTION("an int given as a real") {
    g.t.param("K", 16.0);
    CHECK_THAT(expect_error(validate(g.b.build()), "params.type").message,
               Contains("task 0 (lm.t0): param \"K\" must be an int32, got a real 16"));
  }
  SECTION("an int given as a bool") {
    g.t.param("n_off", true);
    CHECK_THAT(expect_error(validate(g.b.build()), "params.type").message, Contains("got a bool true"));
  }
  SECTION("an int outside int32") {
    g.t.param("flags", int64_t{1} << 40);
    CHECK_THAT(expect_error(validate(g.b.build()), "params.type").message, Contains("is outside int32"));
  }
  SECTION("a non-finite real") {
    g.t.param("scale", std::numeric_limits<double>::infinity());
    CHECK_THAT(expect_error(validate(g.b.build()), "params.type").message, Contains("param \"scale\" must be finite"));
  }
  SECTION("a real given as a string, and an integer real is fine") {
    g.t.param("eps", int64_t{0});
    expect_ok(validate(g.b.build()));
    g.t.param("eps", std::string("1e-5"));
    CHECK_THAT(expect_error(validate(g.b.build()), "params.type").message, Contains("must be a number, got a string"));
  }
  SECTION("an unknown FUSED recipe") {
    ProgramBuilder b;
    const int x = b.input("x", {16}), y = b.output("y", {8});
    b.task(Opcode::Fused, "f").in({x}).out({y}).param("recipe", std::string("GEMV_MUL"));
    CHECK_THAT(expect_error(validate(b.build()), "params.type").message,
               Contains("\"GEMV_MUL\" is not a FUSED recipe (known: GEMV_ADD, RMSNORM_GEMV"));
  }
}

TEST_CASE("validate params.unknown: unknown keys are warnings", "[ir]") {
  Gemv g;
  g.t.i("tile_k", 4);
  const ValidationResult r = validate(g.b.build());
  expect_ok(r);
  const Diagnostic* d = find_rule(r, "params.unknown", true);
  REQUIRE(d != nullptr);
  CHECK_THAT(d->message, Contains("task 0 (lm.t0): param \"tile_k\" is not a known parameter"));
}

TEST_CASE("validate shape: negative dims and operands an opcode cannot take", "[ir]") {
  SECTION("a negative dimension") {
    Gemv g;
    g.b.program().buffers[g.y].shape = {1, -32};
    CHECK_THAT(expect_error(validate(g.b.build()), "shape").message, Contains("buffer 2 \"y\" has negative dimension -32"));
  }
  SECTION("GEMV K against x and W") {
    Gemv g;
    g.t.i("K", 8);
    CHECK_THAT(expect_error(validate(g.b.build()), "shape").message,
               Contains("task 0 (lm.t0): buffer 0 \"x\" has last dimension 16, expected 8 (K)"));
  }
  SECTION("KV_APPEND pos outside the cache") {
    ProgramBuilder b;
    const int k = b.input("k_new", {8}), cache = b.kv("k_cache", {4, 8});
    auto t = b.task(Opcode::KvAppend, "kv").in({k, cache}).out({cache}).i("pos", 3);
    expect_ok(validate(b.build()));
    t.i("pos", 4);
    CHECK_THAT(expect_error(validate(b.build()), "shape").message, Contains("pos 4 is not a row of buffer 1 \"k_cache\""));
  }
}

TEST_CASE("validate tile.bounds: tiles lie inside their buffers", "[ir]") {
  SECTION("GEMV columns") {
    Gemv g;
    g.t.i("n_off", 8);
    CHECK_THAT(expect_error(validate(g.b.build()), "tile.bounds").message,
               Contains("tile cols [8, 40) is not inside the 32 columns of buffer 2 \"y\""));
  }
  SECTION("GEMM rows") {
    ProgramBuilder b;
    const int x = b.input("x", {4, 16}), w = b.weight("W", {8, 16}), y = b.output("y", {4, 8});
    auto t0 = b.task(Opcode::GemmTile, "mm.r0").in({x, w}).out({y}).tile(16, 0, 8).i("M_tile", 2).i("m_off", 0);
    b.task(Opcode::GemmTile, "mm.r1").in({x, w}).out({y}).tile(16, 0, 8).i("M_tile", 2).i("m_off", 2);
    expect_ok(validate(b.build()));
    t0.i("m_off", 3);
    CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message, Contains("tile rows [3, 5) is not inside the 4 rows"));
  }
  SECTION("attention q heads") {
    ProgramBuilder b;
    const int q = b.input("q", {8}), k = b.kv("k", {16, 4}), v = b.kv("v", {16, 4}), o = b.output("o", {8});
    auto t = b.task(Opcode::AttentionTile, "attn").in({q, k, v}).out({o}).i("head_dim", 4).i("kv_start", 0).i("kv_len", 4)
                 .param("scale", 0.5).i("n_heads", 2).i("n_kv_heads", 1);
    expect_ok(validate(b.build()));
    t.i("n_off", 1).i("N_tile", 2);
    CHECK_THAT(expect_error(validate(b.build()), "tile.bounds").message, Contains("q heads [1, 3) are not inside the 2 heads"));
  }
}

TEST_CASE("validate contract: KV_APPEND target, ARGMAX I32, PARTIAL_WRITE F32", "[ir]") {
  SECTION("KV_APPEND writes its input 1") {
    ProgramBuilder b;
    const int k = b.input("k_new", {8}), cache = b.kv("k_cache", {4, 8}), other = b.kv("other", {4, 8});
    auto t = b.task(Opcode::KvAppend, "kv").in({k, cache}).out({other}).i("pos", 0);
    CHECK_THAT(expect_error(validate(b.build()), "contract").message,
               Contains("task 0 (kv): KV_APPEND must write its input 1 (the cache), but writes buffer 2 \"other\""));
    t.t().outputs[0] = BufferId(cache);
    expect_ok(validate(b.build()));
  }
  SECTION("FUSED ROPE_APPEND writes its input 2, a KV cache, a row of it") {
    ProgramBuilder b;
    const int k = b.input("k_new", {8}), f = b.buffer("inv_freq", BufferKind::Const, {2}),
              cache = b.kv("k_cache", {4, 8}), other = b.kv("other", {4, 8});
    auto t = b.task(Opcode::Fused, "rope_k").in({k, f, cache}).out({other}).i("head_dim", 4).i("pos", 0)
                 .param("recipe", std::string("ROPE_APPEND"));
    CHECK_THAT(expect_error(validate(b.build()), "contract").message,
               Contains("task 0 (rope_k): FUSED ROPE_APPEND must write its input 2 (the cache), but writes buffer 3 \"other\""));
    t.t().outputs[0] = BufferId(cache);
    expect_ok(validate(b.build()));
    t.i("pos", 4);
    CHECK_THAT(expect_error(validate(b.build()), "shape").message, Contains("pos 4 is not a row of buffer 2 \"k_cache\""));
    t.i("pos", 0).i("head_dim", 8);
    CHECK_THAT(expect_error(validate(b.build()), "shape").message,
               Contains("buffer 1 \"inv_freq\" has numel 2, expected 4 (inv_freq holds head_dim/2 entries)"));
    t.i("head_dim", 4);
    b.program().buffers[static_cast<size_t>(k)].shape = {4};
    CHECK_THAT(expect_error(validate(b.build()), "shape").message,
               Contains("buffer 0 \"k_new\" has numel 4, expected 8 (one cache row)"));
  }
  SECTION("ROPE's inv_freq holds exactly head_dim/2 entries (the kernels refuse any other size)") {
    ProgramBuilder b;
    const int q = b.input("q", {12}), f = b.buffer("inv_freq", BufferKind::Const, {3}), y = b.output("q_rot", {12});
    auto t = b.task(Opcode::Rope, "rope_q").in({q, f}).out({y}).i("head_dim", 4).param("theta", 1e4);
    CHECK_THAT(expect_error(validate(b.build()), "shape").message,
               Contains("buffer 1 \"inv_freq\" has numel 3, expected 2 (inv_freq holds head_dim/2 entries)"));
    t.i("head_dim", 6);
    expect_ok(validate(b.build()));
  }
  SECTION("FUSED ROPE_APPEND into an activation is refused") {
    ProgramBuilder b;
    const int k = b.input("k_new", {8}), f = b.buffer("inv_freq", BufferKind::Const, {2}), y = b.act("y", {4, 8});
    b.task(Opcode::Fused, "rope_k").in({k, f, y}).out({y}).i("head_dim", 4).i("pos", 0)
        .param("recipe", std::string("ROPE_APPEND"));
    CHECK_THAT(expect_error(validate(b.build()), "contract").message,
               Contains("FUSED ROPE_APPEND writes buffer 2 \"y\", a ACTIVATION buffer; it must be a KV_CACHE"));
  }
  SECTION("SAMPLE_ARGMAX writes I32") {
    ProgramBuilder b;
    const int l = b.input("logits", {16});
    const int tok = b.output("token", {1}, DType::F32);
    b.task(Opcode::SampleArgmax, "argmax").in({l}).out({tok});
    CHECK_THAT(expect_error(validate(b.build()), "contract").message, Contains("buffer 1 \"token\" is F32, must be I32"));
    b.program().buffers[tok].dtype = DType::I32;
    expect_ok(validate(b.build()));
  }
  SECTION("a PARTIAL_WRITE attention tile writes F32") {
    ProgramBuilder b;
    const int q = b.input("q", {8}), k = b.kv("k", {16, 4}), v = b.kv("v", {16, 4});
    const int o = b.output("partial", {12}, DType::F16);
    b.task(Opcode::AttentionTile, "attn").in({q, k, v}).out({o}).i("head_dim", 4).i("kv_start", 0).i("kv_len", 4)
        .param("scale", 0.5).i("n_heads", 2).i("n_kv_heads", 1).i("flags", kFlagPartialWrite);
    CHECK_THAT(expect_error(validate(b.build()), "contract").message, Contains("must be F32 (PARTIAL_WRITE"));
    b.program().buffers[o].dtype = DType::F32;
    expect_ok(validate(b.build()));
  }
}
