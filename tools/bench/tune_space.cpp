// tools/bench/tune_space.cpp: see tune_space.h.
#include "tools/bench/tune_space.h"

#include <algorithm>
#include <set>

#include "ir/text_file.h"
#include "schedule/decode_preset.h"
#include "schedule/fusion.h"
#include "schedule/sm_assign.h"

namespace amk::bench {
namespace {

using schedule::DecodePreset;

/// An integer knob of DecodePreset and its range (preset_knob_range).
struct IntKnob {
  const char* name;
  int64_t lo, hi;
  int64_t DecodePreset::*field;
};

constexpr IntKnob kIntKnobs[] = {
    {"tiles_per_stage", 0, 1024, &DecodePreset::tiles_per_stage},
    {"lm_head_tiles_per_sm", 0, 1024, &DecodePreset::lm_head_tiles_per_sm},
    {"argmax_tiles_per_sm", 0, 64, &DecodePreset::argmax_tiles_per_sm},
    {"kv_partitions", 0, 16, &DecodePreset::kv_partitions},  // 9..15 are refused by the lowering (multiples of 8)
    {"heads_per_task", 0, 1024, &DecodePreset::heads_per_task},
    {"tile_kib", 0, 65536, &DecodePreset::tile_kib},
    {"tiles_per_sm", 1, 1024, &DecodePreset::tiles_per_sm},
};

const IntKnob* find_int_knob(const std::string& name) {
  for (const IntKnob& k : kIntKnobs)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace

KnobRange preset_knob_range(const std::string& name) {
  const IntKnob* k = find_int_knob(name);
  return k != nullptr ? KnobRange{k->lo, k->hi} : KnobRange{0, -1};
}

namespace {

Status invalid(const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); }

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

/// Why `value` is not a valid value of axis `name`, or "" when it is.
std::string value_problem(const std::string& name, const nlohmann::json& value) {
  if (const IntKnob* k = find_int_knob(name)) {
    if (!value.is_number_integer()) return value.dump() + " is not an integer";
    const auto v = value.get<int64_t>();
    if (v < k->lo || v > k->hi)
      return std::to_string(v) + " is not in [" + std::to_string(k->lo) + ", " + std::to_string(k->hi) + "]";
    return "";
  }
  if (name == "rope_in_qkv") return value.is_boolean() ? "" : value.dump() + " is not true or false";
  if (name == "mlp_fold") {
    const bool known = value.is_string() && schedule::mlp_fold_from_name(value.get<std::string>()).has_value();
    return known ? "" : value.dump() + " is not \"auto\", \"on\" or \"off\"";
  }
  if (name == "sm_assignment") {
    if (!value.is_string()) return value.dump() + " is not a string";
    if (!schedule::is_sm_policy(value.get<std::string>())) return schedule::unknown_sm_policy(value.get<std::string>()).message();
    return "";
  }
  // drop_fusion: an array of fusion groups, each "op,op" in any order.
  if (!value.is_array()) return value.dump() + " is not an array of fusion groups";
  for (const nlohmann::json& g : value) {
    if (!g.is_string()) return value.dump() + ": " + g.dump() + " is not a string";
    if (!schedule::is_builtin_fusion_group(g.get<std::string>()))
      return "'" + g.get<std::string>() + "' is not a fusion group of the built-in schedule (docs/SCHEDULE.md lists them)";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& tune_axis_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const IntKnob& k : kIntKnobs) n.emplace_back(k.name);
    n.emplace_back("sm_assignment");
    n.emplace_back("drop_fusion");
    n.emplace_back("rope_in_qkv");
    n.emplace_back("mlp_fold");
    return n;
  }();
  return names;
}

Result<DecodePreset> tune_apply(DecodePreset preset, const std::string& name, const nlohmann::json& value) {
  const std::string problem = value_problem(name, value);
  if (std::find(tune_axis_names().begin(), tune_axis_names().end(), name) == tune_axis_names().end() || !problem.empty())
    return Status(StatusCode::Internal, "tune_apply: " + name + " = " + value.dump() + ": " + problem);
  if (const IntKnob* k = find_int_knob(name)) preset.*(k->field) = value.get<int64_t>();
  else if (name == "sm_assignment") preset.sm_assignment = value.get<std::string>();
  else if (name == "rope_in_qkv") preset.rope_in_qkv = value.get<bool>();
  else if (name == "mlp_fold") preset.mlp_fold = *schedule::mlp_fold_from_name(value.get<std::string>());
  else preset.drop_fusion = value.get<std::vector<std::string>>();
  return preset;
}

Result<TuneSpace> tune_space_from_json(const nlohmann::ordered_json& j, const std::string& origin) {
  if (!j.is_object() || j.empty())
    return invalid(origin + ": a tune space is a non-empty JSON object of axis name -> array of values (axes: " +
                   join(tune_axis_names(), ", ") + ")");
  TuneSpace space;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    if (std::find(tune_axis_names().begin(), tune_axis_names().end(), name) == tune_axis_names().end())
      return invalid(origin + ": '" + name + "' is not a tune axis (axes: " + join(tune_axis_names(), ", ") + ")");
    if (!it.value().is_array() || it.value().empty())
      return invalid(origin + ": " + name + ": must be a non-empty array of values to try");
    TuneAxis axis{name, {}};
    std::set<std::string> seen;
    for (size_t i = 0; i < it.value().size(); ++i) {
      const nlohmann::json value = it.value()[i];
      const std::string where = origin + ": " + name + "[" + std::to_string(i) + "]: ";
      if (const std::string problem = value_problem(name, value); !problem.empty()) return invalid(where + problem);
      if (!seen.insert(value.dump()).second) return invalid(where + value.dump() + " is listed twice");
      axis.values.push_back(value);
    }
    space.axes.push_back(std::move(axis));
  }
  return space;
}

Result<TuneSpace> tune_space_load(const std::string& path) {
  Result<std::string> text = ir::read_text_file(path, "tune space file");
  if (!text) return text.status();
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return Status(StatusCode::ParseError, path + ": not valid JSON: " + e.what());
  }
  return tune_space_from_json(j, path);
}

TuneSpace default_tune_space(const schedule::ModelConfig& model, int64_t max_seq) {
  TuneSpace space;
  // The default first in every axis, so a pass that finds nothing better measures it once.
  space.axes.push_back({"tiles_per_stage", {1, 2, 3}});
  space.axes.push_back({"lm_head_tiles_per_sm", {1, 2}});
  space.axes.push_back({"argmax_tiles_per_sm", {1, 2, 0}});
  // Split-KV: 0 is the preset's choice for max_seq; explicit counts keep a partition >= 256 rows.
  TuneAxis kv{"kv_partitions", {0}};
  for (int64_t p = 1; p <= 8; p *= 2)
    if (p == 1 || max_seq / p >= 256) kv.values.emplace_back(p);
  space.axes.push_back(kv);
  // Query heads per attention task: 0 (the preset's choice), then 1, 2, ..., up to the GQA group
  // (one K / V pass per group) but for the count 0 already gives at this max_seq.
  const int64_t group = model.gqa_group();
  const int64_t preset_heads = schedule::decode_preset_heads_per_task(schedule::DecodePreset{}, model, max_seq);
  TuneAxis heads{"heads_per_task", {0}};
  for (int64_t h = 1; h <= std::max<int64_t>(group, 1); h *= 2)
    if (h != preset_heads) heads.values.emplace_back(h);
  space.axes.push_back(heads);
  TuneAxis policy{"sm_assignment", {"stage_balance"}};
  for (const char* p : schedule::kSmPolicies)
    if (std::string(p) != "stage_balance") policy.values.emplace_back(p);
  space.axes.push_back(policy);
  TuneAxis fusion{"drop_fusion", {nlohmann::json::array()}};
  for (const std::vector<std::string>& g : schedule::fusion_all_groups())
    fusion.values.push_back(nlohmann::json::array({join(g, ",")}));
  space.axes.push_back(fusion);
  // The rope in the q / k GEMVs (the preset's default) or in the attention tasks: whether the
  // rotating GEMVs pay on this device and model (AMK_ROPE_IN_QKV, if set, overrides both values,
  // and the search then measures one schedule: candidates are keyed by their lowered schedule).
  space.axes.push_back({"rope_in_qkv", {true, false}});
  // The MLP fold: the preset's target rule (auto), then both ways, so a device the rule was not
  // measured on finds out (auto lowers like on or off, and candidates are keyed by their lowered
  // schedule, so it costs one measurement, not two). A folded schedule's logits are not
  // bit-reproducible (docs/FOLD.md); tune writes what it picked.
  space.axes.push_back({"mlp_fold", {"auto", "on", "off"}});
  return space;
}

nlohmann::ordered_json tune_preset_json(const DecodePreset& preset) {
  nlohmann::ordered_json j;
  for (const IntKnob& k : kIntKnobs) j[k.name] = preset.*(k.field);
  j["sm_assignment"] = preset.sm_assignment;
  j["drop_fusion"] = preset.drop_fusion;
  j["rope_in_qkv"] = preset.rope_in_qkv;
  j["mlp_fold"] = schedule::mlp_fold_name(preset.mlp_fold);
  return j;
}

std::string tune_label(const DecodePreset& preset) {
  const DecodePreset base;
  std::vector<std::string> parts;
  for (const IntKnob& k : kIntKnobs)
    if (preset.*(k.field) != base.*(k.field)) parts.push_back(std::string(k.name) + "=" + std::to_string(preset.*(k.field)));
  if (preset.sm_assignment != base.sm_assignment) parts.push_back("sm_assignment=" + preset.sm_assignment);
  if (!preset.drop_fusion.empty()) parts.push_back("drop_fusion=" + join(preset.drop_fusion, "+"));
  if (preset.rope_in_qkv != base.rope_in_qkv) parts.push_back(std::string("rope_in_qkv=") + (preset.rope_in_qkv ? "true" : "false"));
  if (preset.mlp_fold != base.mlp_fold) parts.push_back("mlp_fold=" + schedule::mlp_fold_name(preset.mlp_fold));
  return parts.empty() ? "default" : join(parts, " ");
}

}  // namespace amk::bench
