// tests/loader/marshal_test.cpp: tasks and buffers marshalled into the vm/abi.h records: params in
// their ABI slots, the FUSED recipe in flags bits 16-31, descriptors, counters and the view.
#include <catch2/catch.hpp>

#include "ir/opspec.h"
#include "loader/marshal.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

TEST_CASE("marshal: every param lands in its ABI slot", "[loader]") {
  ir::Task t = make_task(3, ir::Opcode::AttentionTile, {0, 1, 2}, {3}, 1, {{0, 2}, {4, 7}}, 0, "attn");
  const char* int_keys[] = {"K",        "N",        "M",       "N_tile",  "M_tile", "n_off", "m_off",
                            "hidden",   "vocab",    "head_dim", "n_heads", "n_kv_heads", "kv_start",
                            "kv_len",   "pos",      "qdtype",  "flags",   "group",  "dim"};
  for (int i = 0; i < 19; ++i) t.params.set(int_keys[i], int64_t{100 + i});
  t.params.set("eps", 1e-5);
  t.params.set("scale", int64_t{2});  // an integer given for a real param is fine
  t.params.set("theta", 500000.0);
  t.params.set("unknown_key", int64_t{5});  // skipped
  auto ins = marshal_task(t);
  REQUIRE(ins.is_ok());
  const amk_params_t& p = ins->params;
  const int32_t got[19] = {p.K,          p.N,        p.M,      p.N_tile, p.M_tile, p.n_off,  p.m_off,
                           p.hidden,     p.vocab,    p.head_dim, p.n_heads, p.n_kv_heads, p.kv_start,
                           p.kv_len,     p.pos,      p.qdtype, p.flags,  p.group,  p.dim};
  for (int i = 0; i < 19; ++i) {
    INFO(int_keys[i]);
    CHECK(got[i] == 100 + i);
  }
  CHECK(p.eps == 1e-5f);
  CHECK(p.scale == 2.0f);
  CHECK(p.theta == 500000.0f);
  CHECK(ins->op == AMK_OP_ATTENTION_TILE);
  CHECK(ins->n_inputs == 3);
  CHECK(ins->inputs[2] == 2);
  CHECK(ins->inputs[3] == -1);
  CHECK(ins->n_outputs == 1);
  CHECK(ins->outputs[0] == 3);
  CHECK(ins->n_waits == 2);
  CHECK(ins->wait_counter[1] == 4);
  CHECK(ins->wait_threshold[1] == 7u);
  CHECK(ins->out_counter == 1);
}

TEST_CASE("marshal: FUSED writes its recipe id into flags bits 16-31", "[loader]") {
  ir::Task t = make_task(0, ir::Opcode::Fused, {0, 1, 2}, {3}, 0, {}, 0, "fused");
  t.params.set("recipe", std::string("SILU_MUL_GEMV_ADD"));
  t.params.set("flags", int64_t{AMK_FLAG_STEP_POS});
  auto ins = marshal_task(t);
  REQUIRE(ins.is_ok());
  CHECK(static_cast<uint32_t>(ins->params.flags) >> AMK_FLAG_RECIPE_SHIFT ==
        static_cast<uint32_t>(ir::FusedRecipe::SiluMulGemvAdd));
  CHECK((ins->params.flags & 0xffff) == AMK_FLAG_STEP_POS);

  t.params.set("recipe", std::string("NO_SUCH_RECIPE"));
  auto bad = marshal_task(t);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Contains("task 0 (fused): param \"recipe\""));
}

TEST_CASE("marshal: mistyped params are refused naming the task and key", "[loader]") {
  ir::Task t = make_task(5, ir::Opcode::GemvTile, {0, 1}, {2}, 0, {}, 0, "gemv");
  t.params.set("K", 1.5);
  auto a = marshal_task(t);
  REQUIRE_FALSE(a.is_ok());
  CHECK_THAT(a.status().message(), Contains("task 5 (gemv): param \"K\" must be an integer, got 1.5"));
  t.params.set("K", int64_t{1} << 40);
  auto b = marshal_task(t);
  REQUIRE_FALSE(b.is_ok());
  CHECK_THAT(b.status().message(), Contains("does not fit an int32"));
}

TEST_CASE("marshal: buffer descriptors carry rank, shape, contiguous strides, dtype and space", "[loader]") {
  ir::Buffer b = make_buffer(0, "kv", ir::BufferKind::KvCache, ir::DType::BF16, {2, 3, 4});
  b.space = ir::MemSpace::GlobalScratch;
  int dummy = 0;
  const amk_buffer_t d = marshal_buffer(b, &dummy);
  CHECK(d.ptr == &dummy);
  CHECK(d.rank == 3);
  CHECK(d.numel == 24);
  CHECK(d.dtype == AMK_DTYPE_BF16);
  CHECK(d.space == AMK_MEM_GLOBAL_SCRATCH);
  CHECK(d.shape[0] == 2);
  CHECK(d.shape[2] == 4);
  CHECK(d.shape[3] == 0);
  CHECK(d.stride[0] == 12);
  CHECK(d.stride[1] == 4);
  CHECK(d.stride[2] == 1);
  const amk_buffer_t s = marshal_buffer(make_buffer(1, "s", ir::BufferKind::Activation, ir::DType::F32, {}), &dummy);
  CHECK(s.rank == 0);
  CHECK(s.numel == 1);
}

TEST_CASE("marshal: a loaded program's tables and view", "[loader]") {
  LoadOptions o;
  o.random_weights_seed = 1;
  auto img = load_program(small_program(), o);
  REQUIRE(img.is_ok());
  const amk_program_t& v = (*img)->view();
  CHECK(v.n_buffers == kSmallBufCount);
  CHECK(v.n_counters == 5);
  CHECK(v.n_instructions == 7);
  CHECK(v.n_sms == 2);
  CHECK((*img)->workers() == 2);
  // Counters zeroed; producers per counter: c2 and c3 have two tiles each.
  for (int c = 0; c < 5; ++c) CHECK(v.counters[c] == 0u);
  CHECK(v.counter_producers[0] == 1u);
  CHECK(v.counter_producers[2] == 2u);
  CHECK(v.counter_producers[3] == 2u);
  // Instruction 5 is proj_a: GEMV_TILE K=8, N_tile=4, n_off=0, on worker 0.
  const amk_instruction_t& proj_a = v.instructions[5];
  CHECK(proj_a.op == AMK_OP_GEMV_TILE);
  CHECK(proj_a.params.K == 8);
  CHECK(proj_a.params.N_tile == 4);
  CHECK(proj_a.params.n_off == 0);
  CHECK(proj_a.sm == 0);
  CHECK(v.instructions[0].params.n_off == 4);
  CHECK(v.instructions[0].sm == 1);
  CHECK(v.instructions[4].params.eps == 1e-5f);
  CHECK(v.instructions[4].params.hidden == 8);
  // Step, error slot and abort flag point into the image.
  REQUIRE(v.step != nullptr);
  CHECK(v.step->pos == 0);
  CHECK(v.step->epoch == 1u);
  REQUIRE(v.error != nullptr);
  CHECK(v.error->code == 0);
  REQUIRE(v.abort_flag != nullptr);
  CHECK(*v.abort_flag == 0);
  CHECK((*img)->buffer_index("lm_head") == kLmHead);
  CHECK((*img)->buffer_index("nope") == -1);
  CHECK((*img)->buffer_bytes(kLogits) == kVocab * 4);
}

TEST_CASE("marshal: a validated FUSED program carries its recipe bits", "[loader]") {
  using K = ir::BufferKind;
  using D = ir::DType;
  ir::Program p;
  p.buffers = {
      make_buffer(0, "tok", K::IoInput, D::I32, {1}),
      make_buffer(1, "embed", K::Weight, D::F32, {kVocab, kHidden}, "e"),
      make_buffer(2, "norm_w", K::Weight, D::F32, {kHidden}, "n"),
      make_buffer(3, "proj", K::Weight, D::F32, {kHidden, kHidden}, "p"),
      make_buffer(4, "x", K::Activation, D::F32, {1, kHidden}),
      make_buffer(5, "y", K::IoOutput, D::F32, {1, kHidden}),
  };
  p.counters = {ir::Counter{ir::CounterId(0), 0, ""}, ir::Counter{ir::CounterId(1), 0, ""}};
  p.tasks = {make_task(0, ir::Opcode::Embed, {0, 1}, {4}, 0, {}, 0, "embed"),
             make_task(1, ir::Opcode::Fused, {4, 2, 3}, {5}, 1, {{0, 1}}, 0, "norm_proj")};
  p.tasks[0].params.set("hidden", int64_t{kHidden});
  p.tasks[1].params.set("recipe", std::string("RMSNORM_GEMV"));
  p.tasks[1].params.set("eps", 1e-6);
  p.tasks[1].params.set("K", int64_t{kHidden});
  p.tasks[1].params.set("N_tile", int64_t{kHidden});
  p.tasks[1].params.set("n_off", int64_t{0});
  LoadOptions o;
  o.random_weights_seed = 3;
  auto img = load_program(p, o);
  REQUIRE(img.is_ok());
  const amk_instruction_t& f = (*img)->view().instructions[1];
  CHECK(f.op == AMK_OP_FUSED);
  CHECK(static_cast<uint32_t>(f.params.flags) >> 16 == static_cast<uint32_t>(ir::FusedRecipe::RmsNormGemv));
  CHECK(f.params.eps == 1e-6f);
}
