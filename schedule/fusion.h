// schedule/fusion.h: the `fusion_grouping` knob resolved into which FUSED recipes to emit (internal).
// A group is a set of op names (order inside a group does not matter); each known group removes
// one or more dependency stages per layer. docs/SCHEDULE.md lists the groups and their recipes.
#pragma once
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "schedule/model_config.h"

namespace amk::schedule {

struct FusionPlan {
  bool attn_norm_qkv = false;     ///< {rmsnorm, q_proj, k_proj, v_proj}: RMSNORM_GEMV q/k/v tiles
  bool mlp_norm_gate_up = false;  ///< {rmsnorm, gate_proj, up_proj}: RMSNORM_GEMV gate/up tiles
  bool o_residual = false;        ///< {o_proj, residual_add}: GEMV_ADD tiles into h, in place
  bool silu_down = false;         ///< silu_mul folded into the down tiles (SILU_MUL_GEMV[_ADD])
  bool down_residual = false;     ///< residual add folded into the down tiles (GEMV_ADD / SILU_MUL_GEMV_ADD)
  bool final_norm_lm_head = false;  ///< {final_norm, lm_head[, argmax]}: RMSNORM_GEMV LM-head tiles
  bool rope_append = false;       ///< {rope, kv_append}: k rotated straight into its cache row (ROPE_APPEND)
  bool rope_attention = false;    ///< {rope, attention}: attention tasks rotate q and take row pos from k / v
                                  ///< (ROPE_ATTENTION); the cache appends move after the attention
  /// {rmsnorm, gate_proj, up_proj, silu_mul, down_proj, residual_add}: the whole MLP in one stage of
  /// RMSNORM_MLP_FOLD tasks accumulating into an F32 h (docs/FOLD.md; needs o_residual).
  bool mlp_fold = false;
  /// {rope, attention, o_proj, residual_add}: the o_proj tiles become FUSED ATTENTION_GEMV_ADD, each
  /// recomputing the whole layer's attention (docs/ATTENTION_IN_O.md), so the attention stage and its
  /// hop go. Implies rope_attention (the appends then run beside the tiles) and o_residual.
  bool attention_o_proj = false;
  /// {rmsnorm, q_proj, k_proj, v_proj, rope, kv_append}: the q / k tiles rotate their outputs (W_q,
  /// W_k in rope-pair order) and the k / v tiles store into the caches' row step.pos (FUSED
  /// RMSNORM_GEMV_ROPE, _ROPE_APPEND, _APPEND; docs/ROPE_IN_GEMV.md), so the attention is a plain
  /// ATTENTION_TILE and the layer has no append tasks. Implies attn_norm_qkv and rope_append's job.
  bool rope_qkv = false;
};

/// Resolve the groups. An unknown group, a projection named by two groups, the MLP fold without
/// {o_proj, residual_add}, or the MLP fold with the attention in o_proj is InvalidArgument naming
/// "fusion_grouping[i]".
[[nodiscard]] Result<FusionPlan> fusion_plan(const std::vector<std::vector<std::string>>& groups);

/// The tiling knobs a plan cannot honour: with attention_o_proj the attention is one pass over every
/// head and the whole cache inside each o_proj tile, so tiling.attention.kv_partitions must be 1
/// (no split-KV, no ATTENTION_COMBINE) and an explicit tiling.attention.heads_per_task must be
/// n_heads. InvalidArgument names the knob.
[[nodiscard]] Status fusion_check_tiling(const FusionPlan& plan, const ir::ScheduleConfig& config,
                                         const ModelConfig& model);

/// The grouping that turns every known fusion on (the fastest lowering amk knows). It leaves out the
/// MLP fold, which gives up bitwise reproducibility (docs/FOLD.md) and replaces two of these groups.
std::vector<std::vector<std::string>> fusion_all_groups();

/// The MLP fold's group: {rmsnorm, gate_proj, up_proj, silu_mul, down_proj, residual_add}.
std::vector<std::string> mlp_fold_group();

/// The rope-in-qkv group: {rmsnorm, q_proj, k_proj, v_proj, rope, kv_append}. It replaces {rmsnorm,
/// q_proj, k_proj, v_proj}, {rope, kv_append} and {rope, attention} (q and k arrive rotated), so it
/// is not in fusion_all_groups(): the gpu-decode preset swaps it in (decode_preset.h, rope_in_qkv).
std::vector<std::string> rope_qkv_group();

/// The attention-in-o_proj group: {rope, attention, o_proj, residual_add}. It replaces {rope,
/// attention} and {o_proj, residual_add} (it claims attention and o_proj), so it is not in
/// fusion_all_groups(): the gpu-decode preset swaps it in (decode_preset.h, attention_in_o_proj).
std::vector<std::string> attention_o_proj_group();

}  // namespace amk::schedule
