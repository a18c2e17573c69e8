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
      {{"rope", "attention"}, {"attention"}, [](FusionPlan& p) { p.rope_attention = true; }},
      {{"rmsnorm", "gate_proj", "up_proj", "silu_mul", "down_proj", "residual_add"}, {"gate_proj", "down_proj"},
       [](FusionPlan& p) { p.mlp_fold = true; }},
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
  return plan;
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

}  // namespace amk::schedule
