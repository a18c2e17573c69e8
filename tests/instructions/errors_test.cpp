// tests/instructions/errors_test.cpp: bad instructions come back as error codes without touching
// memory: every opcode's BAD_PARAMS path with a poisoned output, unknown opcodes, buffer indices
// outside the table, malformed buffer descriptors, and a seeded fuzz over random params.
#include <catch2/catch.hpp>

#include <random>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

TEST_CASE("cpu_execute: unknown opcodes and error names", "[instructions]") {
  RefProgram p;
  for (int32_t op : {20, -1, 999}) CHECK(p.run(make_inst(op, {}, {})) == AMK_DEVERR_UNKNOWN_OPCODE);
  using amk::instructions::device_error_name;
  CHECK(std::string(device_error_name(AMK_DEVERR_NONE)) == "NONE");
  CHECK(std::string(device_error_name(AMK_DEVERR_BAD_PARAMS)) == "BAD_PARAMS");
  CHECK(std::string(device_error_name(AMK_DEVERR_INDEX_OUT_OF_RANGE)) == "INDEX_OUT_OF_RANGE");
  CHECK(std::string(device_error_name(AMK_DEVERR_UNKNOWN_OPCODE)) == "UNKNOWN_OPCODE");
  CHECK(std::string(device_error_name(AMK_DEVERR_BAD_DTYPE)) == "BAD_DTYPE");
  CHECK(std::string(device_error_name(AMK_DEVERR_COUNTER_OVERFLOW)) == "COUNTER_OVERFLOW");
  CHECK(std::string(device_error_name(77)) == "UNKNOWN_ERROR");
}

TEST_CASE("cpu_execute: every opcode refuses params that do not fit its buffers", "[instructions]") {
  RefProgram p;
  const int32_t v8 = p.add(AMK_DTYPE_F32, {8}), v6 = p.add(AMK_DTYPE_F32, {6}), m = p.add(AMK_DTYPE_F32, {4, 8});
  const int32_t out = p.add(AMK_DTYPE_F32, {8}), ids = p.add(AMK_DTYPE_I32, {1});
  const int32_t q = p.add(AMK_DTYPE_I8, {1, 8}), y4 = p.add(AMK_DTYPE_F32, {4});
  struct Bad {
    const char* what;
    amk_instruction_t inst;
  };
  auto with = [](amk_instruction_t i, void (*f)(amk_params_t&)) {
    f(i.params);
    return i;
  };
  const Bad cases[] = {
      {"copy numel", make_inst(AMK_OP_COPY, {v6}, {out})},
      {"embed hidden", with(make_inst(AMK_OP_EMBED, {ids, m}, {out}), [](amk_params_t& r) { r.hidden = 4; })},
      {"rmsnorm hidden", with(make_inst(AMK_OP_RMSNORM, {v8, v8}, {out}), [](amk_params_t& r) { r.hidden = 3; })},
      {"layernorm w", with(make_inst(AMK_OP_LAYERNORM, {v8, v6}, {out}), [](amk_params_t& r) { r.hidden = 8; })},
      {"gemv tile past N", with(make_inst(AMK_OP_GEMV_TILE, {v8, m}, {y4}),
                                [](amk_params_t& r) { r.K = 8; r.n_off = 2; r.N_tile = 3; })},
      {"gemv negative n_off", with(make_inst(AMK_OP_GEMV_TILE, {v8, m}, {y4}),
                                   [](amk_params_t& r) { r.K = 8; r.n_off = -1; r.N_tile = 1; })},
      {"gemv K", with(make_inst(AMK_OP_GEMV_TILE, {v8, m}, {out}), [](amk_params_t& r) { r.K = 6; r.N_tile = 1; })},
      {"gemm rows", with(make_inst(AMK_OP_GEMM_TILE, {v8, m}, {y4}),
                         [](amk_params_t& r) { r.K = 8; r.N_tile = 1; r.m_off = 1; r.M_tile = 1; })},
      {"attention heads", with(make_inst(AMK_OP_ATTENTION_TILE, {v8, m, m}, {out}),
                               [](amk_params_t& r) { r.head_dim = 8; r.n_heads = 1; r.n_kv_heads = 2; })},
      {"attention window", with(make_inst(AMK_OP_ATTENTION_TILE, {v8, m, m}, {out}),
                                [](amk_params_t& r) { r.head_dim = 8; r.n_heads = 1; r.n_kv_heads = 1; r.kv_len = 5; })},
      {"attention head range", with(make_inst(AMK_OP_ATTENTION_TILE, {v8, m, m}, {out}),
                                    [](amk_params_t& r) { r.head_dim = 8; r.n_heads = 1; r.n_kv_heads = 1; r.n_off = 1; })},
      {"rope odd head_dim", with(make_inst(AMK_OP_ROPE, {v6, v6}, {out}), [](amk_params_t& r) { r.head_dim = 3; })},
      {"silu_mul numel", make_inst(AMK_OP_SILU_MUL, {v8, v6}, {out})},
      {"gelu numel", make_inst(AMK_OP_GELU, {v6}, {out})},
      {"add numel", make_inst(AMK_OP_ADD, {v8, v6}, {out})},
      {"mul numel", make_inst(AMK_OP_MUL, {v6}, {out})},
      {"dequant group", with(make_inst(AMK_OP_DEQUANT, {q, v8}, {out}),
                             [](amk_params_t& r) { r.qdtype = AMK_DTYPE_I8; r.group = 0; })},
      {"softmax numel", make_inst(AMK_OP_SOFTMAX, {v6}, {out})},
      {"allreduce numel", make_inst(AMK_OP_ALLREDUCE_SHARD, {v8, v6}, {out})},
      {"kv_append row", make_inst(AMK_OP_KV_APPEND, {v6, out}, {out})},
      {"argmax output", make_inst(AMK_OP_SAMPLE_ARGMAX, {v8}, {out})},
      {"combine shapes", make_inst(AMK_OP_ATTENTION_COMBINE, {v8, v6}, {out})},
      {"fused recipe 0", make_inst(AMK_OP_FUSED, {v8, m}, {out})},
      {"fused recipe 9", with(make_inst(AMK_OP_FUSED, {v8, m}, {out}), [](amk_params_t& r) { r.flags = 9 << 16; })},
      {"fused arity", with(make_inst(AMK_OP_FUSED, {v8, m}, {out}),
                           [](amk_params_t& r) { r.flags = 1 << 16; r.K = 8; r.N_tile = 1; })},
      {"input index", make_inst(AMK_OP_COPY, {99}, {out})},
      {"negative index", make_inst(AMK_OP_ADD, {-1, v8}, {out})},
      {"no output", make_inst(AMK_OP_GELU, {v8}, {})},
      {"too many inputs", make_inst(AMK_OP_COPY, {v8, v8}, {out})},
  };
  for (const Bad& c : cases) {
    p.poison(out);
    p.poison(y4);
    INFO(c.what);
    const int32_t rc = p.run(c.inst);
    CHECK((rc == AMK_DEVERR_BAD_PARAMS || (rc == AMK_DEVERR_BAD_DTYPE && std::string(c.what) == "argmax output")));
    CHECK(p.poisoned(out));
    CHECK(p.poisoned(y4));
  }
  CHECK(p.guards_intact());
}

TEST_CASE("cpu_execute: malformed buffer descriptors are BAD_PARAMS", "[instructions]") {
  amk_buffer_t bufs[2] = {};
  float xs[4] = {1, 2, 3, 4}, ys[4] = {};
  bufs[0] = {xs, 4, 1, AMK_DTYPE_F32, 0, 0, {4}, {1}};
  bufs[1] = {ys, 4, 1, AMK_DTYPE_F32, 0, 0, {4}, {1}};
  amk_program_t prog{};
  prog.buffers = bufs;
  prog.n_buffers = 2;
  const auto copy = make_inst(AMK_OP_COPY, {0}, {1});
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_NONE);
  bufs[1].numel = 5;  // numel disagrees with the shape
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_BAD_PARAMS);
  bufs[1].numel = 4;
  bufs[1].rank = 5;
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_BAD_PARAMS);
  bufs[1].rank = 1;
  bufs[1].stride[0] = -1;
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_BAD_PARAMS);
  bufs[1].stride[0] = 1;
  bufs[1].dtype = 42;
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_BAD_DTYPE);
  bufs[1].dtype = AMK_DTYPE_F32;
  bufs[1].ptr = nullptr;
  CHECK(amk::instructions::cpu_execute(prog, copy) == AMK_DEVERR_BAD_PARAMS);
  CHECK(ys[0] == 1.0f);  // only the first, valid copy wrote
}

TEST_CASE("cpu_execute: seeded fuzz never writes outside a buffer", "[instructions]") {
  RefProgram p;
  std::vector<int32_t> bufs = {
      p.add(AMK_DTYPE_F32, {8}),     p.add(AMK_DTYPE_BF16, {4, 8}),  p.add(AMK_DTYPE_F16, {2, 16}),
      p.add(AMK_DTYPE_F32, {16, 8}), p.add(AMK_DTYPE_I32, {2}, {1, 3}), p.add(AMK_DTYPE_I8, {4, 8}),
      p.add(AMK_DTYPE_I4, {4, 8}),   p.add(AMK_DTYPE_F32, {20}),     p.add(AMK_DTYPE_F32, {1}),
      p.add(AMK_DTYPE_I32, {1}),     p.add(AMK_DTYPE_BF16, {2, 10}), p.add(AMK_DTYPE_F32, {})};
  std::mt19937 rng(2024);
  auto small = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  p.set_step(5);
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    amk_instruction_t inst{};
    inst.op = small(0, 19);
    inst.n_inputs = small(0, 4);
    inst.n_outputs = small(0, 9) > 0 ? 1 : 0;
    for (int i = 0; i < 8; ++i) inst.inputs[i] = small(0, 9) == 0 ? small(-2, 14) : bufs[small(0, 11)];
    inst.outputs[0] = bufs[small(0, 11)];
    amk_params_t& r = inst.params;
    for (int32_t* f : {&r.K, &r.N_tile, &r.n_off, &r.M_tile, &r.m_off, &r.hidden, &r.head_dim, &r.n_heads,
                       &r.n_kv_heads, &r.kv_start, &r.kv_len, &r.pos, &r.group})
      *f = small(0, 3) == 0 ? small(-2, 40) : small(0, 8);
    r.qdtype = small(5, 7);
    r.flags = small(0, 15) | (small(0, 5) << 16);
    r.eps = 1e-5f;
    r.scale = 0.5f;
    const int32_t rc = p.run(inst);
    REQUIRE((rc >= AMK_DEVERR_NONE && rc <= AMK_DEVERR_INDEX_OUT_OF_RANGE));
    REQUIRE(p.guards_intact());
    ok += rc == AMK_DEVERR_NONE;
  }
  CHECK(ok > 100);  // the fuzz also reaches the compute paths
}
