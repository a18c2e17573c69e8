// schedule/fusion.cpp: the table of fusion groups amk knows and how each maps onto a recipe.
#include "schedule/fusion.h"

#include <algorithm>
#include <map>

namespace amk::schedule {
namespace {

struct KnownGroup {
  std::vector<std::string> ops;  ///< as documented (display order)
  std::string claims;            ///< the projection whose tiles absorb the group
  void (*apply)(FusionPlan&);
};

const std::vector<KnownGroup>& known_groups() {
  static const std::vector<KnownGroup> groups = {
      {{"rmsnorm", "q_proj", "k_proj", "v_proj"}, "q_proj", [](FusionPlan& p) { p.attn_norm_qkv = true; }},
      {{"rmsnorm", "gate_proj", "up_proj"}, "gate_proj", [](FusionPlan& p) { p.mlp_norm_gate_up = true; }},
      {{"o_proj", "residual_add"}, "o_proj", [](FusionPlan& p) { p.o_residual = true; }},
      {{"silu_mul", "down_proj", "residual_add"}, "down_proj",
       [](FusionPlan& p) { p.silu_down = p.down_residual = true; }},
      {{"silu_mul", "down_proj"}, "down_proj", [](FusionPlan& p) { p.silu_down = true; }},
      {{"down_proj", "residual_add"}, "down_proj", [](FusionPlan& p) { p.down_residual = true; }},
      {{"final_norm", "lm_head", "argmax"}, "lm_head", [](FusionPlan& p) { p.final_norm_lm_head = true; }},
      {{"final_norm", "lm_head"}, "lm_head", [](FusionPlan& p) { p.final_norm_lm_head = true; }},
      {{"rope", "kv_append"}, "k_rope", [](FusionPlan& p) { p.rope_append = true; }},
      {{"rope", "attention"}, "attention", [](FusionPlan& p) { p.rope_attention = true; }},
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
    auto [it, fresh] = claimed.emplace(match->claims, i);
    if (!fresh) {
      return Status(StatusCode::InvalidArgument, where + ": " + match->claims + " is already fused by fusion_grouping[" +
                                                     std::to_string(it->second) + "]; a projection joins one group");
    }
    match->apply(plan);
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

}  // namespace amk::schedule
