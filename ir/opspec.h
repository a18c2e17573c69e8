// ir/opspec.h: arity and required params per opcode (the spec's OP_REGISTRY), and the FUSED recipes.
#pragma once
#include <string_view>
#include <vector>

#include "ir/enums.h"

namespace amk::ir {

/// What validate() checks an instruction's shape against.
struct OpSpec {
  Opcode op;
  std::string_view name;
  int min_inputs;
  int max_inputs;
  int outputs;
  std::vector<std::string_view> required_params;
};
/// The spec for an opcode (always found: Opcode values come from opcodes.def).
const OpSpec& op_spec(Opcode op);
/// All specs, indexed by opcode code.
const std::vector<OpSpec>& op_specs();

/// FUSED recipes: what a FUSED task computes (docs/OPCODES.md). The id lives in flags bits 16-31.
enum class FusedRecipe : int32_t {
  GemvAdd = 1,         ///< [x, W, residual] -> out tile = x @ W.T + residual tile
  RmsNormGemv = 2,     ///< [x, norm_w, W] -> out tile = rmsnorm(x) * norm_w @ W.T
  SiluMulGemv = 3,     ///< [gate, up, W] -> out tile = (silu(gate) * up) @ W.T
  SiluMulGemvAdd = 4,  ///< [gate, up, W, residual] -> SiluMulGemv + residual tile
  RopeAppend = 5,      ///< [x, inv_freq, cache] -> cache: cache[pos, :] = rope(x, pos) (ROPE then KV_APPEND)
  RopeAttention = 6,   ///< [q, k_cache, v_cache, k_new, v_new, inv_freq] -> out: ATTENTION_TILE over the cache
                       ///< with q and k_new rotated at the step's pos and row pos taken from k_new / v_new
  RmsNormMlpFold = 7,  ///< [x, norm_w, W_mlp [I, 3, K]] -> out [rows, K] F32, ACCUMULATE: for n in the tile,
                       ///< a = silu(xn . W_mlp[n, 0]) * (xn . W_mlp[n, 1]) with xn = rmsnorm(x) * norm_w, and
                       ///< out += a * W_mlp[n, 2] (down_proj's column n; docs/FOLD.md)
  GemvAddCopy = 8,     ///< [x, W, residual] -> out, copy: GEMV_ADD's tile written to both outputs
  AttentionGemvAdd = 9,  ///< [q, k_cache, v_cache, k_new, v_new, inv_freq, W, residual] -> out tile =
                         ///< ROPE_ATTENTION over every q head (rounded to q's dtype) @ W.T + residual tile
                         ///< (docs/ATTENTION_IN_O.md: each o_proj tile recomputes the attention)
  // The step-position GEMVs (docs/ROPE_IN_GEMV.md): RMSNORM_GEMV's tile under STEP_POS, W's rows in
  // rope-pair order where it rotates (output pairs (2i, 2i + 1) of a head are rotate-half's (i, i + hd/2)).
  RmsNormGemvRope = 10,        ///< [x, norm_w, W, inv_freq] -> out tile, its pairs rotated at step.pos
  RmsNormGemvAppend = 11,      ///< [x, norm_w, W] -> KV cache: the tile into row step.pos
  RmsNormGemvRopeAppend = 12,  ///< [x, norm_w, W, inv_freq] -> KV cache: the rotated tile into row step.pos
};
struct RecipeSpec {
  FusedRecipe recipe;
  std::string_view name;  ///< the `recipe` param value, e.g. "GEMV_ADD"
  int inputs;
  std::vector<std::string_view> required_params;
  int residual_input;     ///< index of the input read only over the output tile, or -1
  bool gemv = true;       ///< a GEMV tile with a prologue / epilogue (false: ROPE_APPEND, ROPE_ATTENTION,
                          ///< RMSNORM_MLP_FOLD); ATTENTION_GEMV_ADD is one, its prologue the attention
  int outputs = 1;        ///< exact output count (GEMV_ADD_COPY: 2)
  int weight_input = 1;   ///< a GEMV recipe's W [N_out, K] (RMSNORM_GEMV, SILU_MUL_*: 2; ATTENTION_GEMV_ADD: 6).
                          ///< x (or gate) is input 0, except in ATTENTION_GEMV_ADD: the attention it computes
};
/// All recipes.
const std::vector<RecipeSpec>& recipe_specs();
/// The recipe named `name`, or nullptr.
const RecipeSpec* recipe_find(std::string_view name);
/// The recipe with id `id`, or nullptr.
const RecipeSpec* recipe_find(int64_t id);

}  // namespace amk::ir
