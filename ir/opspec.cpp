// ir/opspec.cpp: tables expanded from ir/opcodes.def.
#include "ir/opspec.h"

#include <string>

namespace amk::ir {
namespace {

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<OpSpec> build_specs() {
  std::vector<OpSpec> specs;
#define AMK_OPCODE(Name, SPEC, code, min_in, max_in, outs, req) \
  specs.push_back(OpSpec{Opcode::Name, #SPEC, min_in, max_in, outs, split_commas(req)});
#include "ir/opcodes.def"
#undef AMK_OPCODE
  return specs;
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = build_specs();
  return specs;
}

const OpSpec& op_spec(Opcode op) { return op_specs()[static_cast<size_t>(op)]; }

const std::vector<RecipeSpec>& recipe_specs() {
  static const std::vector<RecipeSpec> specs = {
      {FusedRecipe::GemvAdd, "GEMV_ADD", 3, {"K", "N_tile", "n_off"}, 2},
      {FusedRecipe::RmsNormGemv, "RMSNORM_GEMV", 3, {"eps", "K", "N_tile", "n_off"}, -1, true, 1, 2},
      {FusedRecipe::SiluMulGemv, "SILU_MUL_GEMV", 3, {"K", "N_tile", "n_off"}, -1, true, 1, 2},
      {FusedRecipe::SiluMulGemvAdd, "SILU_MUL_GEMV_ADD", 4, {"K", "N_tile", "n_off"}, 3, true, 1, 2},
      {FusedRecipe::RopeAppend, "ROPE_APPEND", 3, {"head_dim", "pos"}, -1, false},
      {FusedRecipe::RopeAttention, "ROPE_ATTENTION", 6,
       {"head_dim", "kv_start", "kv_len", "scale", "n_heads", "n_kv_heads", "flags"}, -1, false},
      {FusedRecipe::RmsNormMlpFold, "RMSNORM_MLP_FOLD", 3, {"eps", "K", "N_tile", "n_off", "flags"}, -1, false},
      {FusedRecipe::GemvAddCopy, "GEMV_ADD_COPY", 3, {"K", "N_tile", "n_off"}, 2, true, 2},
      // ROPE_ATTENTION's params, then GEMV_ADD's tile (n_off / N_tile select W's rows, not heads).
      {FusedRecipe::AttentionGemvAdd, "ATTENTION_GEMV_ADD", 8,
       {"head_dim", "kv_start", "kv_len", "scale", "n_heads", "n_kv_heads", "flags", "K", "N_tile", "n_off"}, 7, true, 1, 6},
      {FusedRecipe::RmsNormGemvRope, "RMSNORM_GEMV_ROPE", 4, {"eps", "K", "N_tile", "n_off", "head_dim", "flags"}, -1,
       true, 1, 2},
      {FusedRecipe::RmsNormGemvAppend, "RMSNORM_GEMV_APPEND", 3, {"eps", "K", "N_tile", "n_off", "flags"}, -1, true, 1, 2},
      {FusedRecipe::RmsNormGemvRopeAppend, "RMSNORM_GEMV_ROPE_APPEND", 4,
       {"eps", "K", "N_tile", "n_off", "head_dim", "flags"}, -1, true, 1, 2},
  };
  return specs;
}

const RecipeSpec* recipe_find(std::string_view name) {
  for (const auto& r : recipe_specs())
    if (r.name == name) return &r;
  return nullptr;
}

const RecipeSpec* recipe_find(int64_t id) {
  for (const auto& r : recipe_specs())
    if (static_cast<int64_t>(r.recipe) == id) return &r;
  return nullptr;
}

static_assert(kOpcodeCount == 20, "opcodes.def and kOpcodeCount disagree");
// ATTENTION_GEMV_ADD's eight operands are exactly the ABI's cap; a smaller cap cannot encode it.
static_assert(kMaxInputs >= 8, "FUSED ATTENTION_GEMV_ADD needs 8 inputs per instruction");

}  // namespace amk::ir
