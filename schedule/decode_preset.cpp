// schedule/decode_preset.cpp: see decode_preset.h.
#include "schedule/decode_preset.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "schedule/fusion.h"
#include "schedule/tiling.h"
#include "targets/registry.h"

namespace amk::schedule {
namespace {

// "rope,kv_append" -> {"kv_append", "rope"}: a fusion group compared as a set.
std::vector<std::string> sorted_ops(const std::string& text) {
  std::vector<std::string> names;
  for (size_t b = 0, e; b <= text.size(); b = e + 1) {
    e = std::min(text.find(',', b), text.size());
    names.push_back(text.substr(b, e - b));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> sorted_ops(std::vector<std::string> group) {
  std::sort(group.begin(), group.end());
  return group;
}

bool drops(const DecodePreset& preset, const std::vector<std::string>& group) {
  for (const std::string& text : preset.drop_fusion)
    if (sorted_ops(text) == sorted_ops(group)) return true;
  return false;
}

// The groups the attention-in-o_proj group replaces (it claims attention and o_proj).
bool replaced_by_attention_o_proj(const std::vector<std::string>& group) {
  const std::vector<std::string> key = sorted_ops(group);
  return key == std::vector<std::string>{"attention", "rope"} || key == std::vector<std::string>{"o_proj", "residual_add"};
}

// The 16-bit dtypes that both auto rules (attention in o_proj, the MLP fold) were measured with.
bool half_dtype(ir::DType dtype) { return dtype == ir::DType::BF16 || dtype == ir::DType::F16; }

// The preset's auto / on / off knobs (AttentionInOProj, MlpFold) by name: "auto" | "on" | "off".
template <typename Mode>
std::optional<Mode> tri_state_from_name(std::string_view name) {
  if (name == "auto") return Mode::Auto;
  if (name == "on") return Mode::On;
  if (name == "off") return Mode::Off;
  return std::nullopt;
}

template <typename Mode>
std::string tri_state_name(Mode mode) {
  return mode == Mode::On ? "on" : mode == Mode::Off ? "off" : "auto";
}

bool env_allows_attention_in_o() {
  const char* env = std::getenv(kAttentionInOEnv);
  return env != nullptr && std::string_view(env) == "1";
}

// The groups the rope-in-qkv group replaces (it claims q_proj, k_rope and q_rope).
bool replaced_by_rope_qkv(const std::vector<std::string>& group) {
  const std::vector<std::string> key = sorted_ops(group);
  return key == sorted_ops(std::vector<std::string>{"rmsnorm", "q_proj", "k_proj", "v_proj"}) ||
         key == std::vector<std::string>{"kv_append", "rope"} || key == std::vector<std::string>{"attention", "rope"};
}

}  // namespace

WideTiles wide_tiles_for(int64_t n, int64_t sms, int64_t fast_sms, double ratio, int64_t per_sm,
                         int64_t max_wide_rows) {
  // Whole rows make the ideal widths (n / (slow + fast x ratio) and ratio x that) unreachable, so
  // try the narrow widths around the ideal one, each with the narrowest wide tile that still
  // covers n, and keep the one whose stage ends first: max(narrow, wide / ratio) in slow-SM rows.
  // Ties keep the smaller wide tile; a wide tile no wider than the narrow one means equal tiles.
  const int64_t wide_count = fast_sms * per_sm, narrow_count = (sms - fast_sms) * per_sm;
  const double weight = static_cast<double>(narrow_count) + static_cast<double>(wide_count) * ratio;
  const auto ideal = static_cast<int64_t>(std::floor(static_cast<double>(n) / weight));
  WideTiles best;
  best.n_tile = std::max<int64_t>(1, (n + sms * per_sm - 1) / (sms * per_sm));  // equal tiles
  best.wide_n_tile = best.n_tile;
  double best_end = static_cast<double>(best.n_tile);
  // Where the equal tiles fit the bound, so must the wide ones (DecodePreset::wide_tile_max_bytes).
  const bool bounded = max_wide_rows > 0 && best.n_tile <= max_wide_rows;
  const auto consider = [&](int64_t narrow, int64_t wide) {
    const double end = std::max(static_cast<double>(narrow), static_cast<double>(wide) / ratio);
    if (wide > narrow && (!bounded || wide <= max_wide_rows) && end < best_end) {
      best = WideTiles{narrow, wide, wide_count};
      best_end = end;
    }
  };
  for (int64_t narrow = std::max<int64_t>(1, ideal - 1); wide_count > 0 && narrow <= ideal + 2; ++narrow) {
    const int64_t rest = n - narrow_count * narrow;
    consider(narrow, std::max(narrow, rest <= 0 ? narrow : (rest + wide_count - 1) / wide_count));
  }
  // The bound itself as the wide width: the narrow tiles cover the rest.
  if (bounded && wide_count > 0 && narrow_count > 0) {
    const int64_t rest = n - wide_count * max_wide_rows;
    consider(std::max<int64_t>(1, rest <= 0 ? 1 : (rest + narrow_count - 1) / narrow_count), max_wide_rows);
  }
  return best;
}

std::optional<AttentionInOProj> attention_in_o_proj_from_name(std::string_view name) {
  return tri_state_from_name<AttentionInOProj>(name);
}

std::string attention_in_o_proj_name(AttentionInOProj mode) { return tri_state_name(mode); }

bool attention_in_o_proj_shape_ok(const ModelConfig& model, int64_t max_seq, ir::DType dtype) {
  // The shape the design is for (docs/ATTENTION_IN_O.md): the 1B's head_dim with 16-bit caches,
  // whose K / V window a tile re-reads from L2 cheaply; f32 or head_dim 128 doubles those reads.
  return half_dtype(dtype) && model.head_dim == kAttentionInOProjHeadDim && max_seq <= kAttentionInOProjMaxSeq;
}

bool decode_preset_attention_in_o_proj(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                       ir::DType dtype) {
  if (preset.attention_in_o_proj != AttentionInOProj::Auto) return preset.attention_in_o_proj == AttentionInOProj::On;
  // Auto never picks a combination the lowering refuses, nor overrides a choice the preset was
  // given about what the group replaces: split-KV, head tiling, the fold, a dropped group.
  const bool attention_as_asked = preset.kv_partitions <= 1 && preset.heads_per_task == 0;
  const bool groups_kept = preset.mlp_fold != MlpFold::On && !drops(preset, {"rope", "attention"}) &&
                           !drops(preset, {"o_proj", "residual_add"});
  return attention_as_asked && groups_kept && attention_in_o_proj_shape_ok(model, max_seq, dtype) &&
         env_allows_attention_in_o();
}

bool decode_preset_rope_in_qkv(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq, ir::DType dtype) {
  const char* env = std::getenv(kRopeInQkvEnv);
  const std::string_view setting = env != nullptr ? env : "";
  const bool asked = setting == "0" ? false : setting == "1" ? true : preset.rope_in_qkv;
  return asked && !decode_preset_attention_in_o_proj(preset, model, max_seq, dtype) &&
         !drops(preset, {"rmsnorm", "q_proj", "k_proj", "v_proj"});
}

std::optional<MlpFold> mlp_fold_from_name(std::string_view name) { return tri_state_from_name<MlpFold>(name); }

std::string mlp_fold_name(MlpFold mode) { return tri_state_name(mode); }

bool mlp_fold_target_ok(const ir::GpuTarget& target) {
  if (target.sm_arch < 90 || targets::target_is_amd(target) || target.num_sms <= 0 || !(target.hbm_bandwidth_gbs > 0.0))
    return false;
  return target.hbm_bandwidth_gbs / static_cast<double>(target.num_sms) <= kMlpFoldMaxGbsPerSm;
}

bool mlp_fold_shape_ok(const ModelConfig& model, ir::DType dtype) {
  return half_dtype(dtype) && model.hidden_size > 0 && model.hidden_size <= kMlpFoldAutoMaxHidden;
}

bool decode_preset_mlp_fold(const DecodePreset& preset, const ModelConfig& model, const ir::GpuTarget& target,
                            int64_t max_seq, ir::DType dtype) {
  if (preset.mlp_fold != MlpFold::Auto) return preset.mlp_fold == MlpFold::On;
  // Auto never picks a combination the lowering refuses (the fold with the attention in o_proj,
  // or without the {o_proj, residual_add} group that leaves h for it), nor overrides a dropped
  // MLP group: --drop-fusion measures the schedule without that group, not with the fold.
  const bool groups_kept = !drops(preset, {"rmsnorm", "gate_proj", "up_proj"}) &&
                           !drops(preset, {"silu_mul", "down_proj", "residual_add"}) &&
                           !drops(preset, {"o_proj", "residual_add"});
  return groups_kept && mlp_fold_target_ok(target) && mlp_fold_shape_ok(model, dtype) &&
         !decode_preset_attention_in_o_proj(preset, model, max_seq, dtype);
}

bool is_builtin_fusion_group(const std::string& text) {
  for (const std::vector<std::string>& group : fusion_all_groups())
    if (sorted_ops(group) == sorted_ops(text)) return true;
  return false;
}

int64_t decode_preset_kv_partitions(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                    ir::DType dtype) {
  if (preset.kv_partitions > 0) return preset.kv_partitions;
  // The fused o_proj tiles attend over the whole cache in one pass: split-KV has no fused form.
  if (decode_preset_attention_in_o_proj(preset, model, max_seq, dtype)) return 1;
  // One partition per 2048 cache rows, so a long context spreads over SMs while a short one
  // leaves the extra partitions empty (they exit at once); past 6144 rows, 16 when a KV head's
  // query heads (a GQA group of 4 to 8) share one task, else 8 (with two query heads per task,
  // decode_preset_heads_per_task): either way about one attention task per SM on a 1B / 8B shape
  // (8 KV heads x 16). H200, 1B shape, max_seq 8192, ctx 128 / 8192 with the tensor-core
  // attention: 4 partitions of one head 1.324 / 1.653 ms, 8 of two heads 1.332 / 1.520
  // (docs/PERFORMANCE.md, row 105); an attention task's time is ~7.8 us + ~9.6 us per 1000 keys
  // whatever its query heads (row 127), so 16 of four heads halve the keys per task (row 128).
  // H100, before: 4 partitions 2.46 / 2.79, 8 of one head 2.70 / 3.12 (row 28: 8 x 32 heads is two
  // attention tasks per SM).
  const int64_t p = std::clamp<int64_t>((max_seq + 2047) / 2048, 1, 4);
  if (p < 4) return p;
  const int64_t group = model.gqa_group();
  return group >= 4 && group <= 8 ? kMaxKvPartitions : kMaxCombineOperands;
}

int64_t decode_preset_heads_per_task(const DecodePreset& preset, const ModelConfig& model, int64_t max_seq,
                                     ir::DType dtype) {
  const int64_t n_heads = std::max<int64_t>(1, model.num_attention_heads);
  if (preset.heads_per_task > 0) return std::clamp<int64_t>(preset.heads_per_task, 1, n_heads);
  // Each fused o_proj tile computes every head (the lowering refuses any other head tiling).
  if (decode_preset_attention_in_o_proj(preset, model, max_seq, dtype)) return n_heads;
  // Auto: one query head per task, so the GQA group's heads run on separate SMs (attention at
  // decode is latency-bound); at 8 partitions two (of one KV head), at 16 the whole group: the
  // tensor-core path runs a KV head's query heads (up to 8) in one pass, reading each K / V row
  // once for all of them, and keeps the attention tasks at about one per SM (rows 105, 128).
  const int64_t parts = decode_preset_kv_partitions(preset, model, max_seq, dtype);
  if (parts > kMaxCombineOperands) return std::clamp<int64_t>(model.gqa_group(), 1, n_heads);
  return parts >= kMaxCombineOperands && model.gqa_group() % 2 == 0 ? 2 : 1;
}

std::string decode_preset_json(const ModelConfig& model, const ir::GpuTarget& target, int64_t max_seq,
                               const DecodePreset& tiling, ir::DType dtype) {
  nlohmann::json j;
  j["fusion_grouping"] = nlohmann::json::array();
  const bool attention_in_o = decode_preset_attention_in_o_proj(tiling, model, max_seq, dtype);
  const bool fold = decode_preset_mlp_fold(tiling, model, target, max_seq, dtype);
  const bool rope_qkv = decode_preset_rope_in_qkv(tiling, model, max_seq, dtype);
  for (const std::vector<std::string>& group : fusion_all_groups()) {
    // The fold replaces both MLP groups (it claims gate_proj and down_proj).
    const bool mlp = std::find(group.begin(), group.end(), "gate_proj") != group.end() ||
                     std::find(group.begin(), group.end(), "down_proj") != group.end();
    const bool replaced = (fold && mlp) || (attention_in_o && replaced_by_attention_o_proj(group)) ||
                          (rope_qkv && replaced_by_rope_qkv(group));
    if (!drops(tiling, group) && !replaced) j["fusion_grouping"].push_back(group);
  }
  if (fold) j["fusion_grouping"].push_back(mlp_fold_group());
  if (attention_in_o) j["fusion_grouping"].push_back(attention_o_proj_group());
  if (rope_qkv) j["fusion_grouping"].push_back(rope_qkv_group());
  j["sm_assignment"] = tiling.sm_assignment;
  j["tiling"]["attention"]["kv_partitions"] = decode_preset_kv_partitions(tiling, model, max_seq, dtype);
  j["tiling"]["attention"]["heads_per_task"] = decode_preset_heads_per_task(tiling, model, max_seq, dtype);
  const int64_t h = model.hidden_size, q = model.q_dim(), inter = model.intermediate_size, kv = model.kv_dim();
  struct Proj {
    const char* name;
    int64_t n, k;      ///< output rows, input width
    int64_t stage_n;   ///< output rows of the projections that run in the same stage, this one's included
  };
  // Wide tiles for the fast SMs (DecodePreset::fast_sms) in the stages of one projection, whose
  // tiles alone decide the stage (q / k / v share theirs three ways, gate / up two).
  const bool wide = tiling.fast_sms > 0 && tiling.tiles_per_stage > 0 && tiling.fast_sm_ratio > 1.0;
  if (wide) {
    j["fast_sms"] = tiling.fast_sms;
    j["fast_sm_ratio"] = tiling.fast_sm_ratio;
  }
  const auto single_stage = [&](const std::string& name) {
    return name == "o_proj" || name == "lm_head" || (fold ? name == "gate_proj" : name == "down_proj");
  };
  const Proj projs[] = {{"q_proj", q, h, q + 2 * kv},        {"k_proj", kv, h, q + 2 * kv},
                        {"v_proj", kv, h, q + 2 * kv},       {"o_proj", h, q, h},
                        {"gate_proj", inter, h, fold ? inter : 2 * inter},  // the fold: gate's tiles alone
                        {"up_proj", inter, h, 2 * inter},
                        {"down_proj", h, inter, h},          {"lm_head", model.vocab_size, h, model.vocab_size}};
  const int64_t sms = std::max<int64_t>(1, target.num_sms);
  for (const Proj& p : projs) {
    int64_t rows = 0;
    const bool lm_head_per_sm = tiling.lm_head_tiles_per_sm > 0 && std::string(p.name) == "lm_head";
    const int64_t per_sm = lm_head_per_sm ? tiling.lm_head_tiles_per_sm : tiling.tiles_per_stage;
    if (wide && single_stage(p.name)) {
      const int64_t row_bytes = std::max<int64_t>(1, ir::dtype_nbytes(dtype, p.k));
      const WideTiles w = wide_tiles_for(p.stage_n, sms, std::min(tiling.fast_sms, sms), tiling.fast_sm_ratio, per_sm,
                                         tiling.wide_tile_max_bytes / row_bytes);
      j["tiling"][p.name]["N_tile"] = w.n_tile;
      if (w.wide_tiles > 0) {
        j["tiling"][p.name]["wide_tiles"] = w.wide_tiles;
        j["tiling"][p.name]["wide_N_tile"] = w.wide_n_tile;
      }
      continue;
    }
    if (lm_head_per_sm) {
      const int64_t tiles = sms * tiling.lm_head_tiles_per_sm;
      rows = std::max<int64_t>(1, (p.n + tiles - 1) / tiles);
    } else if (tiling.tiles_per_stage > 0) {
      // The stage's rows over tiles_per_stage x SMs tiles of one size (the projections of a stage
      // share K), so stage_balance gives every SM the same bytes in this stage.
      rows = std::max<int64_t>(1, (p.stage_n + sms * tiling.tiles_per_stage - 1) / (sms * tiling.tiles_per_stage));
    } else if (tiling.tile_kib > 0) {
      // Tiles of about tile_kib KiB of bf16 weights: the weight stream cuts them into ring-slot
      // chunks, so the size trades per-task costs against load balance (docs/PERFORMANCE.md).
      rows = std::max<int64_t>(1, tiling.tile_kib * 1024 / (p.k * 2));
    } else {
      // tiles_per_sm tiles of each projection per SM: every SM has work in every stage, and the
      // per-task cost is paid as few times as that allows.
      const int64_t tiles = sms * std::max<int64_t>(1, tiling.tiles_per_sm);
      rows = std::max<int64_t>(1, (p.n + tiles - 1) / tiles);
    }
    j["tiling"][p.name]["N_tile"] = rows;
  }
  if (tiling.argmax_tiles_per_sm > 0) {
    // Tiles of a multiple of 8 logits, so each starts 32-byte aligned (the float4 scan).
    const int64_t tiles = sms * tiling.argmax_tiles_per_sm;
    const int64_t per_tile = (model.vocab_size + tiles - 1) / tiles;
    j["tiling"]["argmax"]["N_tile"] = std::max<int64_t>(8, (per_tile + 7) / 8 * 8);
  }
  return j.dump();
}

}  // namespace amk::schedule
