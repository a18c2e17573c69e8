// tests/ir/abi_sync_test.cpp: vm/abi.h (the device ABI) and ir/ (the IR) must agree on every enum
// code, capacity, version and parameter slot, and the ABI structs must keep the 0.2 layout of the
// original implementation. Codes are checked against literal spec values too, so a renumbering
// that moves both sides at once is still caught.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include "ir/enums.h"
#include "ir/params.h"
#include "ir/program.h"
#include "vm/abi.h"

using namespace amk::ir;

namespace {
template <typename E>
int code(E e) {
  return static_cast<int>(e);
}
}  // namespace

TEST_CASE("abi: DType codes match amk_dtype_t and the spec", "[ir][abi]") {
  CHECK(code(DType::F32) == AMK_DTYPE_F32);
  CHECK(code(DType::F16) == AMK_DTYPE_F16);
  CHECK(code(DType::BF16) == AMK_DTYPE_BF16);
  CHECK(code(DType::F8E4M3) == AMK_DTYPE_F8E4M3);
  CHECK(code(DType::F8E5M2) == AMK_DTYPE_F8E5M2);
  CHECK(code(DType::I32) == AMK_DTYPE_I32);
  CHECK(code(DType::I8) == AMK_DTYPE_I8);
  CHECK(code(DType::I4) == AMK_DTYPE_I4);
  CHECK(code(DType::U8) == AMK_DTYPE_U8);
  CHECK(code(DType::Bool) == AMK_DTYPE_BOOL);
  CHECK(kDTypeCount == AMK_DTYPE_COUNT);
  // Spec 1.1 literal codes.
  const int spec[] = {AMK_DTYPE_F32, AMK_DTYPE_F16, AMK_DTYPE_BF16, AMK_DTYPE_F8E4M3, AMK_DTYPE_F8E5M2,
                      AMK_DTYPE_I32, AMK_DTYPE_I8,  AMK_DTYPE_I4,   AMK_DTYPE_U8,     AMK_DTYPE_BOOL};
  for (int i = 0; i < 10; ++i) CHECK(spec[i] == i);
}

TEST_CASE("abi: MemSpace and BufferKind codes match vm/abi.h and the spec", "[ir][abi]") {
  CHECK(code(MemSpace::Hbm) == AMK_MEM_HBM);
  CHECK(code(MemSpace::GlobalScratch) == AMK_MEM_GLOBAL_SCRATCH);
  CHECK(code(MemSpace::Smem) == AMK_MEM_SMEM);
  CHECK(code(MemSpace::Register) == AMK_MEM_REGISTER);
  CHECK(kMemSpaceCount == AMK_MEM_COUNT);
  CHECK(AMK_MEM_HBM == 0);
  CHECK(AMK_MEM_REGISTER == 3);

  CHECK(code(BufferKind::Weight) == AMK_KIND_WEIGHT);
  CHECK(code(BufferKind::Activation) == AMK_KIND_ACTIVATION);
  CHECK(code(BufferKind::KvCache) == AMK_KIND_KV_CACHE);
  CHECK(code(BufferKind::IoInput) == AMK_KIND_IO_INPUT);
  CHECK(code(BufferKind::IoOutput) == AMK_KIND_IO_OUTPUT);
  CHECK(code(BufferKind::Const) == AMK_KIND_CONST);
  CHECK(kBufferKindCount == AMK_KIND_COUNT);
  CHECK(AMK_KIND_WEIGHT == 0);
  CHECK(AMK_KIND_CONST == 5);
}

TEST_CASE("abi: every opcode code matches amk_opcode_t and the spec", "[ir][abi]") {
  struct Row {
    Opcode op;
    int abi;
    int spec;
    const char* name;
  };
  const Row rows[] = {
      {Opcode::Nop, AMK_OP_NOP, 0, "NOP"},
      {Opcode::Copy, AMK_OP_COPY, 1, "COPY"},
      {Opcode::Embed, AMK_OP_EMBED, 2, "EMBED"},
      {Opcode::RmsNorm, AMK_OP_RMSNORM, 3, "RMSNORM"},
      {Opcode::LayerNorm, AMK_OP_LAYERNORM, 4, "LAYERNORM"},
      {Opcode::GemvTile, AMK_OP_GEMV_TILE, 5, "GEMV_TILE"},
      {Opcode::GemmTile, AMK_OP_GEMM_TILE, 6, "GEMM_TILE"},
      {Opcode::AttentionTile, AMK_OP_ATTENTION_TILE, 7, "ATTENTION_TILE"},
      {Opcode::Rope, AMK_OP_ROPE, 8, "ROPE"},
      {Opcode::SiluMul, AMK_OP_SILU_MUL, 9, "SILU_MUL"},
      {Opcode::Gelu, AMK_OP_GELU, 10, "GELU"},
      {Opcode::Add, AMK_OP_ADD, 11, "ADD"},
      {Opcode::Mul, AMK_OP_MUL, 12, "MUL"},
      {Opcode::Dequant, AMK_OP_DEQUANT, 13, "DEQUANT"},
      {Opcode::Softmax, AMK_OP_SOFTMAX, 14, "SOFTMAX"},
      {Opcode::AllreduceShard, AMK_OP_ALLREDUCE_SHARD, 15, "ALLREDUCE_SHARD"},
      {Opcode::KvAppend, AMK_OP_KV_APPEND, 16, "KV_APPEND"},
      {Opcode::SampleArgmax, AMK_OP_SAMPLE_ARGMAX, 17, "SAMPLE_ARGMAX"},
      {Opcode::AttentionCombine, AMK_OP_ATTENTION_COMBINE, 18, "ATTENTION_COMBINE"},
      {Opcode::Fused, AMK_OP_FUSED, 19, "FUSED"},
  };
  STATIC_REQUIRE(sizeof(rows) / sizeof(rows[0]) == static_cast<size_t>(kOpcodeCount));
  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(code(r.op) == r.abi);
    CHECK(code(r.op) == r.spec);
    CHECK(std::string(opcode_name(r.op)) == r.name);
  }
  CHECK(kOpcodeCount == AMK_OP_COUNT);
}

TEST_CASE("abi: capacities, flags and versions match", "[ir][abi]") {
  CHECK(kMaxInputs == AMK_MAX_INPUTS);
  CHECK(kMaxOutputs == AMK_MAX_OUTPUTS);
  CHECK(kMaxWaits == AMK_MAX_WAITS);
  CHECK(kMaxRank == AMK_MAX_RANK);
  CHECK(AMK_MAX_INPUTS == 8);
  CHECK(AMK_MAX_OUTPUTS == 4);
  CHECK(AMK_MAX_WAITS == 8);
  CHECK(AMK_MAX_RANK == 4);
  CHECK(kFlagCausal == AMK_FLAG_CAUSAL);
  CHECK(kFlagPartialWrite == AMK_FLAG_PARTIAL_WRITE);
  CHECK(kFlagRecipeShift == AMK_FLAG_RECIPE_SHIFT);
  const std::string abi = std::to_string(AMK_ABI_VERSION_MAJOR) + "." + std::to_string(AMK_ABI_VERSION_MINOR);
  CHECK(abi == kAbiVersion);
  // The IR's major version is the ABI's major version.
  CHECK(std::string(kIrVersion).substr(0, 2) == std::to_string(AMK_ABI_VERSION_MAJOR) + ".");
}

TEST_CASE("abi: struct sizes and field offsets keep the 0.2 layout", "[ir][abi]") {
  CHECK(sizeof(amk_params_t) == 88);
  CHECK(sizeof(amk_buffer_t) == 96);
  CHECK(sizeof(amk_instruction_t) == 224);
  CHECK(sizeof(amk_counter_t) == 4);

  CHECK(offsetof(amk_buffer_t, ptr) == 0);
  CHECK(offsetof(amk_buffer_t, numel) == 8);
  CHECK(offsetof(amk_buffer_t, rank) == 16);
  CHECK(offsetof(amk_buffer_t, dtype) == 20);
  CHECK(offsetof(amk_buffer_t, space) == 24);
  CHECK(offsetof(amk_buffer_t, shape) == 32);
  CHECK(offsetof(amk_buffer_t, stride) == 64);

  CHECK(offsetof(amk_instruction_t, op) == 0);
  CHECK(offsetof(amk_instruction_t, n_waits) == 12);
  CHECK(offsetof(amk_instruction_t, inputs) == 16);
  CHECK(offsetof(amk_instruction_t, outputs) == 48);
  CHECK(offsetof(amk_instruction_t, wait_counter) == 64);
  CHECK(offsetof(amk_instruction_t, wait_threshold) == 96);
  CHECK(offsetof(amk_instruction_t, out_counter) == 128);
  CHECK(offsetof(amk_instruction_t, sm) == 132);
  CHECK(offsetof(amk_instruction_t, params) == 136);

  CHECK(offsetof(amk_params_t, K) == 0);
  CHECK(offsetof(amk_params_t, dim) == 72);
  CHECK(offsetof(amk_params_t, eps) == 76);
  CHECK(offsetof(amk_params_t, theta) == 84);
}

TEST_CASE("abi: param_fields() is the amk_params_t field order", "[ir][abi]") {
  struct Slot {
    const char* key;
    size_t offset;
  };
#define AMK_SLOT(f) Slot{#f, offsetof(amk_params_t, f)}
  const Slot slots[] = {
      AMK_SLOT(K),        AMK_SLOT(N),        AMK_SLOT(M),      AMK_SLOT(N_tile), AMK_SLOT(M_tile),
      AMK_SLOT(n_off),    AMK_SLOT(m_off),    AMK_SLOT(hidden), AMK_SLOT(vocab),  AMK_SLOT(head_dim),
      AMK_SLOT(n_heads),  AMK_SLOT(n_kv_heads), AMK_SLOT(kv_start), AMK_SLOT(kv_len), AMK_SLOT(pos),
      AMK_SLOT(qdtype),   AMK_SLOT(flags),    AMK_SLOT(group),  AMK_SLOT(dim),    AMK_SLOT(eps),
      AMK_SLOT(scale),    AMK_SLOT(theta),
  };
#undef AMK_SLOT
  const size_t n_slots = sizeof(slots) / sizeof(slots[0]);
  const size_t first_real = offsetof(amk_params_t, eps);

  const auto& fields = param_fields();
  size_t marshalled = 0;
  for (const ParamField& f : fields) {
    if (f.type == ParamType::String) {
      CHECK(f.abi_index == -1);  // recipe: carried in flags bits 16-31, not a slot
      continue;
    }
    REQUIRE(marshalled < n_slots);
    const Slot& s = slots[marshalled];
    INFO("param " << f.key << " vs amk_params_t." << s.key);
    CHECK(f.key == s.key);
    if (f.type == ParamType::Int32) {
      CHECK(s.offset < first_real);
      CHECK(static_cast<size_t>(f.abi_index) == s.offset / sizeof(int32_t));
    } else {
      CHECK(s.offset >= first_real);
      CHECK(static_cast<size_t>(f.abi_index) == (s.offset - first_real) / sizeof(float));
    }
    ++marshalled;
  }
  CHECK(marshalled == n_slots);
}
