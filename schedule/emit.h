// schedule/emit.h: emitting the decode-step graph of a Llama model as stages of tasks (internal).
// The residual stream `h` is one buffer updated in place by every residual add (F32 with the MLP
// fold, whose tasks add into it with atomic adds: docs/FOLD.md); each layer owns
// its other activations (paging is what lets them share memory). Every emit_* call opens the
// stages it needs on the builder, so stage order is program order.
#pragma once
#include <cstdint>
#include <string>

#include "ir/program.h"
#include "schedule/builder.h"
#include "schedule/fusion.h"
#include "schedule/model_config.h"
#include "schedule/tiling.h"

namespace amk::schedule {

struct LowerContext {
  const ModelConfig& model;
  const TilingPlan& tiling;
  const FusionPlan& fusion;
  ir::DType dtype;         ///< activations and KV cache
  ir::DType weight_dtype;  ///< WEIGHT buffers
  int64_t max_seq;
  ProgramBuilder b;
  ir::BufferId token, embed, inv_freq, h;  ///< set by emit_embed

  /// A transient [n] activation in global scratch.
  ir::BufferId activation(const std::string& name, int64_t n, ir::DType d);
  ir::BufferId activation(const std::string& name, int64_t n) { return activation(name, n, dtype); }
  /// A WEIGHT buffer bound to HF state-dict key `source`.
  ir::BufferId weight(const std::string& name, std::vector<int64_t> shape, const std::string& source);
  /// A stacked WEIGHT buffer [N, parts, K] (docs/JSON.md "stack"): row n of each part, a part's
  /// `transpose` read as its transposed tensor.
  ir::BufferId weight_stack(const std::string& name, std::vector<int64_t> shape, std::vector<ir::StackPart> parts);
  /// A WEIGHT buffer [N, K] bound to `source` with its rows in rope-pair order per head of
  /// `head_dim` rows (docs/JSON.md "rope_pairs"): rotate-half pairs become adjacent rows.
  ir::BufferId weight_rope_pairs(const std::string& name, std::vector<int64_t> shape, const std::string& source,
                                 int64_t head_dim);
};

/// The fused form of a projection's tiles (docs/OPCODES.md FUSED recipes).
enum class GemvForm {
  Plain,      ///< GEMV_TILE          [x, W] -> out
  RmsNorm,    ///< RMSNORM_GEMV       [x, norm_w, W] -> out
  SiluMul,    ///< SILU_MUL_GEMV      [gate, up, W] -> out
  Add,        ///< GEMV_ADD           [x, W, residual] -> residual (in place)
  SiluMulAdd,  ///< SILU_MUL_GEMV_ADD  [gate, up, W, residual] -> residual (in place)
  AddCopy,     ///< GEMV_ADD_COPY      [x, W, residual] -> residual (in place), copy
  // The step-position GEMVs (docs/ROPE_IN_GEMV.md): W in rope-pair order where they rotate; their
  // tiles are rounded up to an even row count (whole pairs).
  RmsNormRope,        ///< RMSNORM_GEMV_ROPE        [x, norm_w, W, inv_freq] -> out (q)
  RmsNormAppend,      ///< RMSNORM_GEMV_APPEND      [x, norm_w, W] -> cache row step.pos (v)
  RmsNormRopeAppend,  ///< RMSNORM_GEMV_ROPE_APPEND [x, norm_w, W, inv_freq] -> cache row step.pos (k)
};

/// One projection to cut into N_tile column tiles.
struct GemvJob {
  std::string label;  ///< "L3.q_proj"
  std::string proj;   ///< tiling key, e.g. "q_proj"
  GemvForm form = GemvForm::Plain;
  ir::BufferId x;     ///< x, or gate for the SiluMul forms
  ir::BufferId x2;    ///< norm_w (RmsNorm) or up (SiluMul forms); unused otherwise
  ir::BufferId w;     ///< [N, K]
  ir::BufferId out;   ///< [N]; the residual itself for the Add forms; the KV cache for the Append forms
  int64_t K = 0;
  int64_t N = 0;
  ir::BufferId copy = {};  ///< AddCopy's second output [N] (`= {}`: aggregate inits may stop before it)
};

/// Add the tiles of `job` to the current stage.
void emit_gemv_tiles(LowerContext& c, const GemvJob& job);
/// Add one RMSNORM task (x -> y with weight w) to the current stage.
void emit_rmsnorm(LowerContext& c, const std::string& label, ir::BufferId x, ir::BufferId w, ir::BufferId y);
/// Add one elementwise task (ADD or SILU_MUL) to the current stage.
void emit_elementwise(LowerContext& c, ir::Opcode op, const std::string& label, ir::BufferId a, ir::BufferId b,
                      ir::BufferId y);

/// Buffers shared by the whole program and the EMBED stage.
void emit_embed(LowerContext& c);
/// All stages of decoder layer `layer`.
void emit_layer(LowerContext& c, int64_t layer);
/// Final norm, LM head into the logits output, and SAMPLE_ARGMAX into next_token.
void emit_head(LowerContext& c, ir::BufferId& logits, ir::BufferId& next_token);
/// SAMPLE_ARGMAX of `logits` into `next_token`: one task, or (tiling.argmax) a stage of tiles
/// writing candidates and a stage with their combine.
void emit_argmax(LowerContext& c, ir::BufferId logits, ir::BufferId next_token);

/// The loader-synthesized inv_freq source for `model` (docs/OPCODES.md "Constants").
std::string rope_inv_freq_source(const ModelConfig& model);

}  // namespace amk::schedule
