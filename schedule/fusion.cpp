// schedule/fusion.cpp: the table of fusion groups amk knows and how each maps onto a recipe.
#include "schedule/fusion.h"

#include <algorithm>
#include <map>

namespace amk::schedule {
namespace {

struct KnownGroup {
  std::vector<std::string> ops;  ///< as documented (display order)
  std::vector<std::string> claims;  ///< the projections whose tiles absorb the group
  void (*apply)(FusionPlan&);
};

const std::vector<KnownGroup>& known_groups() {
  static const std::vector<KnownGroup> groups = {
      {{"rmsnorm", "q_proj", "k_proj", "v_proj"}, {"q_proj"}, [](FusionPlan& p) { p.attn_norm_qkv = true; }},
      {{"rmsnorm", "gate_proj", "up_proj"}, {"gate_proj"}, [](FusionPlan& p) { p.mlp_norm_gate_up = true; }},
      {{"o_proj", "residual_add"}, {"o_proj"}, [](FusionPlan& p) { p.o_residual = true; }},
      {{"silu_mul", "down_proj", "residual_add"}, {"down_proj"},
       [](FusionPlan& p) { p.silu_down = p.down_residual = true; }},
      {{"silu_mul", "down_proj"}, {"down_proj"}, [](FusionPlan& p) { p.silu_down = true; }},
      {{"down_proj", "residual_add"}, {"down_proj"}, [](FusionPlan& p) { p.down_residual = true; }},
      {{"final_norm", "lm_head", "argmax"}, {"lm_head"}, [](FusionPlan& p) { p.final_norm_lm_head = true; }},
      {{"final_norm", "lm_head"}, {"lm_head"}, [](FusionPlan& p) { p.final_norm_lm_head = true; }},
      {{"rope", "kv_append"}, {"k_rope"}, [](FusionPlan& p) { p.rope_append = true; }},
      {{"rope", "attention"}, {"attention", "q_rope"}, [](FusionPlan& p) { p.rope_attention = true; }},
      {{"rmsnorm", "gate_proj", "up_proj", "silu_mul", "down_proj", "residual_add"}, {"gate_proj", "down_proj"},
       [](FusionPlan& p) { p.mlp_fold = true; }},
      // The fused tiles take ROPE_ATTENTION's operands (q rotated in the task, row pos from k / v)
      // and end as GEMV_ADD's in-place residual tile: both groups' forms, so it claims both.
      {{"rope", "attention", "o_proj", "residual_add"}, {"attention", "o_proj", "q_rope"},
       [](FusionPlan& p) { p.attention_o_proj = p.rope_attention = p.o_residual = true; }},
      // The q / k / v tiles do the rotation and the appends: q's rope (claimed by the groups that
      // rotate q in the attention), k's rope and append, and the norm's and projections' group.
      {{"rmsnorm", "q_proj", "k_proj", "v_proj", "rope", "kv_append"}, {"q_proj", "k_rope", "q_rope"},
       [](FusionPlan& p) { p.rope_qkv = p.attn_norm_qkv = true; }},
  };
  return groups;
}

std::string group_text(const std::vector<std::string>& ops) {
  std::string out = "[";
  for (size_t i = 0; i < ops.size(); ++i) out += (i ? ", \"" : "\"") + ops[i] + "\"";
  return out + "]";
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

Result<FusionPlan> fusion_plan(const std::vector<std::vector<std::string>>& groups) {
  FusionPlan plan;
  std::map<std::string, size_t> claimed;  // projection -> the group index that fused it
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string where = "fusion_grouping[" + std::to_string(i) + "]";
    const auto key = sorted(groups[i]);
    const KnownGroup* match = nullptr;
    for (const auto& g : known_groups())
      if (sorted(g.ops) == key) match = &g;
    if (match == nullptr) {
      std::string known;
      for (const auto& g : known_groups()) known += (known.empty() ? "" : ", ") + group_text(g.ops);
      return Status(StatusCode::InvalidArgument,
                    where + ": unknown fusion group " + group_text(groups[i]) + " (known groups: " + known + ")");
    }
    for (const std::string& proj : match->claims) {
      auto [it, fresh] = claimed.emplace(proj, i);
      if (!fresh) {
        return Status(StatusCode::InvalidArgument, where + ": " + proj + " is already fused by fusion_grouping[" +
                                                       std::to_string(it->second) + "]; a projection joins one group");
      }
    }
    match->apply(plan);
  }
  if (plan.mlp_fold && !plan.o_residual) {
    // The fold accumulates into h while it reads the MLP's input from a copy that only the o_proj
    // tiles' GEMV_ADD_COPY writes (docs/FOLD.md).
    return Status(StatusCode::InvalidArgument,
                  "fusion_grouping[" + std::to_string(claimed.at("gate_proj")) +
                      "]: the MLP fold needs the group [\"o_proj\", \"residual_add\"] too (its o_proj tiles "
                      "leave the MLP's input in a copy of h)");
  }
  if (plan.mlp_fold && plan.attention_o_proj) {
    // The fold reads the MLP's input from the copy of h that GEMV_ADD_COPY o_proj tiles write;
    // ATTENTION_GEMV_ADD writes h only (there is no recipe that does both).
    return Status(StatusCode::InvalidArgument,
                  "fusion_grouping[" + std::to_string(claimed.at("gate_proj")) +
                      "]: the MLP fold cannot run with the attention in o_proj (fusion_grouping[" +
                      std::to_string(claimed.at("o_proj")) +
                      "]): the fold needs o_proj tiles that also write a copy of h, and ATTENTION_GEMV_ADD "
                      "writes h only");
  }
  return plan;
}

Status fusion_check_tiling(const FusionPlan& plan, const ir::ScheduleConfig& config, const ModelConfig& model) {
  if (!plan.attention_o_proj) return Status::ok();
  const std::string why = " with the fusion group " + group_text(attention_o_proj_group()) +
                          ": every o_proj tile computes the attention of all heads over the whole cache itself";
  const auto attn = config.tiling.find("attention");
  if (attn == config.tiling.end()) return Status::ok();
  const auto get = [&](const char* key) -> const int64_t* {
    const auto it = attn->second.find(key);
    return it == attn->second.end() ? nullptr : &it->second;
  };
  // Split-KV's partials and ATTENTION_COMBINE have no fused form: long contexts keep the group off.
  if (const int64_t* parts = get("kv_partitions"); parts != nullptr && *parts != 1) {
    return Status(StatusCode::InvalidArgument,
                  "tiling.attention.kv_partitions: " + std::to_string(*parts) + " must be 1" + why +
                      " (split-KV and ATTENTION_COMBINE have no fused form; leave the group out for long contexts)");
  }
  // The fused task has no head range (its n_off / N_tile are the o_proj tile).
  if (const int64_t* heads = get("heads_per_task"); heads != nullptr && *heads != model.num_attention_heads) {
    return Status(StatusCode::InvalidArgument,
                  "tiling.attention.heads_per_task: " + std::to_string(*heads) + " must be num_attention_heads (" +
                      std::to_string(model.num_attention_heads) + ") or absent" + why +
                      " (there is no attention head tiling)");
  }
  return Status::ok();
}

std::vector<std::vector<std::string>> fusion_all_groups() {
  return {{"rmsnorm", "q_proj", "k_proj", "v_proj"},
          {"rmsnorm", "gate_proj", "up_proj"},
          {"o_proj", "residual_add"},
          {"silu_mul", "down_proj", "residual_add"},
          {"final_norm", "lm_head", "argmax"},
          {"rope", "kv_append"},
          {"rope", "attention"}};
}

std::vector<std::string> mlp_fold_group() {
  return {"rmsnorm", "gate_proj", "up_proj", "silu_mul", "down_proj", "residual_add"};
}

std::vector<std::string> rope_qkv_group() { return {"rmsnorm", "q_proj", "k_proj", "v_proj", "rope", "kv_append"}; }

std::vector<std::string> attention_o_proj_group() { return {"rope", "attention", "o_proj", "residual_add"}; }

}  // namespace amk::schedule
