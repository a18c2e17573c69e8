// tests/ir/access_test.cpp: the access model of docs/OPCODES.md, operand by operand.
#include <catch2/catch.hpp>

#include "ir/access.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::ProgramBuilder;

namespace {

Region box(int64_t r0, int64_t r1, int64_t c0, int64_t c1) { return Region{r0, r1, c0, c1}; }

// The accesses of task `t`, as (buffer, write, region, operand) tuples compared field by field.
void expect_access(const Access& a, int buffer, bool write, Region r, int operand) {
  CHECK(a.buffer.value == buffer);
  CHECK(a.write == write);
  CHECK(a.region == r);
  CHECK(a.operand == operand);
}

}  // namespace

TEST_CASE("access: matrix view and whole regions", "[ir]") {
  Buffer b;
  b.shape = {2, 3, 5};
  CHECK(matrix_view(b).rows == 6);
  CHECK(matrix_view(b).cols == 5);
  CHECK(whole_region(b) == box(0, 6, 0, 5));
  b.shape = {};
  CHECK(matrix_view(b).rows == 1);
  CHECK(matrix_view(b).cols == 1);
  b.shape = {7};
  CHECK(whole_region(b) == box(0, 1, 0, 7));
}

TEST_CASE("access: default ops read inputs whole and write outputs whole", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {2, 4}), y = b.act("y", {8});
  b.task(Opcode::Add, "add").in({x, y}).out({y});
  const Program p = b.build();
  const auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 3);
  expect_access(acc[0], x, false, box(0, 2, 0, 4), 0);
  expect_access(acc[1], y, false, box(0, 1, 0, 8), 1);
  expect_access(acc[2], y, true, box(0, 1, 0, 8), 0);
}

TEST_CASE("access: GEMV_TILE writes its column tile over every row", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {2, 16}), w = b.weight("W", {32, 16}), y = b.act("y", {2, 32});
  b.gemv("t", x, w, y, 16, 8, 4);
  const Program p = b.build();
  const auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 3);
  expect_access(acc[0], x, false, box(0, 2, 0, 16), 0);
  expect_access(acc[1], w, false, box(0, 32, 0, 16), 1);
  expect_access(acc[2], y, true, box(0, 2, 8, 12), 0);
}

TEST_CASE("access: a mistyped tile param falls back to the whole buffer", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {16}), w = b.weight("W", {32, 16}), y = b.act("y", {32});
  b.gemv("t", x, w, y, 16, 8, 4).param("n_off", 8.0);
  const Program p = b.build();
  const auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 3);
  CHECK(acc[2].region == box(0, 1, 0, 32));
}

TEST_CASE("access: GEMM_TILE reads its x rows and writes its row x column tile", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {8, 16}), w = b.weight("W", {32, 16}), y = b.act("y", {8, 32});
  b.task(Opcode::GemmTile, "mm").in({x, w}).out({y}).tile(16, 4, 8).i("M_tile", 2).i("m_off", 6);
  const Program p = b.build();
  const auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 3);
  expect_access(acc[0], x, false, box(6, 8, 0, 16), 0);
  expect_access(acc[2], y, true, box(6, 8, 4, 12), 0);
}

TEST_CASE("access: ATTENTION_TILE reads its q heads and writes its output heads", "[ir]") {
  ProgramBuilder b;
  const int q = b.act("q", {1, 32}), k = b.kv("k", {64, 16}), v = b.kv("v", {64, 16}), o = b.act("o", {1, 32});
  auto t = b.task(Opcode::AttentionTile, "attn").in({q, k, v}).out({o}).i("head_dim", 8).i("n_heads", 4).i("n_kv_heads", 2)
               .i("kv_start", 0).i("kv_len", 8).param("scale", 0.35).i("n_off", 1).i("N_tile", 2);
  Program p = b.build();
  auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 4);
  expect_access(acc[0], q, false, box(0, 1, 8, 24), 0);
  expect_access(acc[1], k, false, box(0, 64, 0, 16), 1);
  expect_access(acc[2], v, false, box(0, 64, 0, 16), 2);
  expect_access(acc[3], o, true, box(0, 1, 8, 24), 0);
  // PARTIAL_WRITE: each head stores hd + 2 values.
  t.i("flags", kFlagPartialWrite);
  p = b.build();
  acc = task_accesses(p, p.tasks[0]);
  expect_access(acc[3], o, true, box(0, 1, 10, 30), 0);
  // A stacked output [S, n_heads * (hd + 2)]: only its row m_off (default 0).
  const int stack = b.act("stack", {3, 40});
  b.program().tasks[0].outputs[0] = BufferId(stack);
  p = b.build();
  expect_access(task_accesses(p, p.tasks[0])[3], stack, true, box(0, 1, 10, 30), 0);
  t.i("m_off", 2);
  p = b.build();
  expect_access(task_accesses(p, p.tasks[0])[3], stack, true, box(2, 3, 10, 30), 0);
  b.program().tasks[0].outputs[0] = BufferId(o);
  b.program().tasks[0].params.erase("m_off");
  // Without n_off / N_tile the tile is every head.
  b.program().tasks[0].params.erase("n_off");
  b.program().tasks[0].params.erase("N_tile");
  p = b.build();
  acc = task_accesses(p, p.tasks[0]);
  expect_access(acc[0], q, false, box(0, 1, 0, 32), 0);
}

TEST_CASE("access: KV_APPEND reads its new row and the whole cache, and writes the whole cache", "[ir]") {
  ProgramBuilder b;
  const int n = b.act("k_new", {16}), c = b.kv("k_cache", {64, 16});
  b.task(Opcode::KvAppend, "kv").in({n, c}).out({c}).i("pos", 5);
  const Program p = b.build();
  const auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 3);
  expect_access(acc[0], n, false, box(0, 1, 0, 16), 0);
  expect_access(acc[1], c, false, box(0, 64, 0, 16), 1);
  expect_access(acc[2], c, true, box(0, 64, 0, 16), 0);
}

TEST_CASE("access: FUSED recipes write their tile and read the residual tile", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {16}), w = b.weight("W", {32, 16}), h = b.act("h", {1, 32});
  const int g = b.act("g", {16}), u = b.act("u", {16});
  b.task(Opcode::Fused, "o").in({x, w, h}).out({h}).tile(16, 8, 8).param("recipe", std::string("GEMV_ADD"));
  b.task(Opcode::Fused, "d").in({g, u, w, h}).out({h}).tile(16, 0, 4).param("recipe", std::string("SILU_MUL_GEMV_ADD"));
  b.task(Opcode::Fused, "n").in({x, x, w}).out({h}).tile(16, 4, 4).param("recipe", std::string("RMSNORM_GEMV"));
  const Program p = b.build();
  auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 4);
  expect_access(acc[0], h, false, box(0, 1, 8, 16), 2);
  expect_access(acc[1], x, false, box(0, 1, 0, 16), 0);
  expect_access(acc[3], h, true, box(0, 1, 8, 16), 0);
  acc = task_accesses(p, p.tasks[1]);
  REQUIRE(acc.size() == 5);
  expect_access(acc[0], h, false, box(0, 1, 0, 4), 3);
  expect_access(acc[4], h, true, box(0, 1, 0, 4), 0);
  acc = task_accesses(p, p.tasks[2]);
  REQUIRE(acc.size() == 4);
  expect_access(acc[3], h, true, box(0, 1, 4, 8), 0);
}

TEST_CASE("access: RMSNORM_MLP_FOLD reads its w_mlp triples and accumulates into its whole output", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("h_mlp", {2, 8}), nw = b.weight("norm_w", {8}), w = b.weight("w_mlp", {6, 3, 8}), h = b.act("h", {2, 8});
  auto t = b.task(Opcode::Fused, "fold").in({x, nw, w}).out({h}).tile(8, 1, 2).param("eps", 1e-5)
               .i("flags", kFlagAccumulate | int64_t{7} << kFlagRecipeShift).param("recipe", std::string("RMSNORM_MLP_FOLD"));
  Program p = b.build();
  auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 4);
  expect_access(acc[0], x, false, box(0, 2, 0, 8), 0);
  expect_access(acc[1], nw, false, box(0, 1, 0, 8), 1);
  expect_access(acc[2], w, false, box(3, 9, 0, 8), 2);  // columns [1, 3) of I: rows [3, 9) of the [18, 8] view
  expect_access(acc[3], h, true, box(0, 2, 0, 8), 0);
  for (size_t i = 0; i < 3; ++i) CHECK_FALSE(acc[i].accumulate);
  CHECK(acc[3].accumulate);
  // Without ACCUMULATE (which validate() rejects) the write is judged as a plain store.
  t.i("flags", int64_t{7} << kFlagRecipeShift);
  p = b.build();
  acc = task_accesses(p, p.tasks[0]);
  CHECK_FALSE(acc[3].accumulate);
  // A mistyped tile reads all of w_mlp.
  t.i("flags", kFlagAccumulate).param("n_off", 1.0);
  p = b.build();
  acc = task_accesses(p, p.tasks[0]);
  expect_access(acc[2], w, false, box(0, 18, 0, 8), 2);
  CHECK(acc[3].accumulate);
}

TEST_CASE("access: GEMV_ADD_COPY writes its tile to both outputs; no other access accumulates", "[ir]") {
  ProgramBuilder b;
  const int x = b.act("x", {16}), w = b.weight("W", {32, 16}), h = b.act("h", {1, 32}), c = b.act("h_mlp", {1, 32});
  b.task(Opcode::Fused, "o").in({x, w, h}).out({h, c}).tile(16, 8, 8).param("recipe", std::string("GEMV_ADD_COPY"));
  b.task(Opcode::Fused, "g").in({x, w, h}).out({h}).tile(16, 8, 8).i("flags", kFlagAccumulate)
      .param("recipe", std::string("GEMV_ADD"));
  const Program p = b.build();
  auto acc = task_accesses(p, p.tasks[0]);
  REQUIRE(acc.size() == 5);
  expect_access(acc[0], h, false, box(0, 1, 8, 16), 2);
  expect_access(acc[1], x, false, box(0, 1, 0, 16), 0);
  expect_access(acc[2], w, false, box(0, 32, 0, 16), 1);
  expect_access(acc[3], h, true, box(0, 1, 8, 16), 0);
  expect_access(acc[4], c, true, box(0, 1, 8, 16), 1);
  for (const Access& a : acc) CHECK_FALSE(a.accumulate);
  // ACCUMULATE on a recipe that stores (rejected by validate()) does not make its write an add.
  for (const Access& a : task_accesses(p, p.tasks[1])) CHECK_FALSE(a.accumulate);
}
