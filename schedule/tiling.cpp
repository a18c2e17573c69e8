// schedule/tiling.cpp: resolving and checking the `tiling` knob.
// Defaults: gemv N_tile 256; argmax one whole task; attention one KV partition and one GQA group (n_heads / n_kv_heads
// query heads, which share one K/V head) per task, so each task reads its K/V rows once.
#include "schedule/tiling.h"

#include <algorithm>

namespace amk::schedule {
namespace {

constexpr int64_t kInt32Max = 2147483647;

Status invalid(const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); }

std::string known_archetypes() {
  std::string out = "gemv";
  for (const auto& p : projection_names()) out += ", " + p;
  return out + ", attention, argmax";
}

// Read `tiling[arch][key]` into `dst` when present, checking [lo, hi].
Status read_knob(const std::map<std::string, int64_t>& params, const std::string& arch, const std::string& key,
                 int64_t lo, int64_t hi, const std::string& hi_why, int64_t& dst) {
  auto it = params.find(key);
  if (it == params.end()) return Status::ok();
  if (it->second < lo || it->second > hi) {
    return invalid("tiling." + arch + "." + key + ": " + std::to_string(it->second) + " must be in [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "] (" + hi_why + ")");
  }
  dst = it->second;
  return Status::ok();
}

Status check_keys(const std::map<std::string, int64_t>& params, const std::string& arch,
                  const std::vector<std::string>& allowed) {
  for (const auto& kv : params) {
    if (std::find(allowed.begin(), allowed.end(), kv.first) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return invalid("tiling." + arch + "." + kv.first + ": unknown tiling parameter (known for " + arch + ": " + list + ")");
  }
  return Status::ok();
}

}  // namespace

const std::vector<std::string>& projection_names() {
  static const std::vector<std::string> names = {"q_proj",    "k_proj",  "v_proj",    "o_proj",
                                                 "gate_proj", "up_proj", "down_proj", "lm_head"};
  return names;
}

Result<TilingPlan> tiling_plan(const ir::ScheduleConfig& config, const ModelConfig& model, int64_t max_seq) {
  const auto& projs = projection_names();
  for (const auto& kv : config.tiling) {
    const bool known = kv.first == "gemv" || kv.first == "attention" || kv.first == "argmax" ||
                       std::find(projs.begin(), projs.end(), kv.first) != projs.end();
    if (!known) return invalid("tiling." + kv.first + ": unknown op archetype (known: " + known_archetypes() + ")");
    const std::vector<std::string> allowed =
        kv.first == "attention" ? std::vector<std::string>{"kv_partitions", "heads_per_task"}
        : kv.first == "gemv" || kv.first == "argmax" ? std::vector<std::string>{"N_tile"}
                                                     : std::vector<std::string>{"N_tile", "wide_tiles", "wide_N_tile"};
    if (Status s = check_keys(kv.second, kv.first, allowed); !s) return s;
  }
  auto params_of = [&](const std::string& arch) -> const std::map<std::string, int64_t>& {
    static const std::map<std::string, int64_t> empty;
    auto it = config.tiling.find(arch);
    return it == config.tiling.end() ? empty : it->second;
  };

  TilingPlan plan;
  int64_t gemv_tile = kDefaultGemvNTile;
  if (Status s = read_knob(params_of("gemv"), "gemv", "N_tile", 1, kInt32Max, "int32", gemv_tile); !s) return s;
  for (const auto& p : projs) {
    int64_t tile = gemv_tile;
    // Wider than the output is allowed (one tile), so one setting can serve every projection.
    if (Status s = read_knob(params_of(p), p, "N_tile", 1, kInt32Max, "int32", tile); !s) return s;
    plan.n_tile[p] = tile;
    // Wide tiles: both knobs or neither, so a count never silently means tiles of N_tile.
    int64_t wide = 0, wide_tile = 0;
    if (Status s = read_knob(params_of(p), p, "wide_tiles", 0, kInt32Max, "int32", wide); !s) return s;
    if (Status s = read_knob(params_of(p), p, "wide_N_tile", 1, kInt32Max, "int32", wide_tile); !s) return s;
    if ((wide > 0) != (wide_tile > 0))
      return invalid("tiling." + p + ": wide_tiles and wide_N_tile go together (got wide_tiles " + std::to_string(wide) +
                     (wide_tile > 0 ? ", wide_N_tile " + std::to_string(wide_tile) : ", no wide_N_tile") + ")");
    if (wide > 0) {
      plan.wide_tiles[p] = wide;
      plan.wide_n_tile[p] = wide_tile;
    }
  }

  const auto& attn = params_of("attention");
  const int64_t max_p = std::min(kMaxKvPartitions, max_seq);
  if (Status s = read_knob(attn, "attention", "kv_partitions", 1, max_p,
                           "ATTENTION_COMBINE merges <= " + std::to_string(kMaxKvPartitions) +
                               " partials and each needs >= 1 cache row of max_seq " + std::to_string(max_seq),
                           plan.kv_partitions);
      !s) {
    return s;
  }
  if (plan.kv_partitions > kMaxCombineOperands && plan.kv_partitions % kMaxCombineOperands != 0)
    return Status(StatusCode::InvalidArgument,
                  "tiling.attention.kv_partitions " + std::to_string(plan.kv_partitions) + " must be at most " +
                      std::to_string(kMaxCombineOperands) + " or a multiple of it (ATTENTION_COMBINE takes " +
                      std::to_string(kMaxCombineOperands) + " operands, each a stack of equal rows)");
  plan.heads_per_task = model.gqa_group();
  if (Status s = read_knob(attn, "attention", "heads_per_task", 1, model.num_attention_heads,
                           "num_attention_heads", plan.heads_per_task);
      !s) {
    return s;
  }
  // SAMPLE_ARGMAX tiles: absent = one whole scan (the spec's program); N_tile >= vocab is one too.
  if (Status s = read_knob(params_of("argmax"), "argmax", "N_tile", 1, kInt32Max, "int32", plan.argmax_tile); !s)
    return s;
  if (plan.argmax_tile >= model.vocab_size) plan.argmax_tile = 0;
  return plan;
}

Span TilingPlan::kv_partition(int64_t p, int64_t max_seq) const {
  const int64_t begin = p * max_seq / kv_partitions;
  return Span{begin, (p + 1) * max_seq / kv_partitions - begin};
}

std::vector<Span> spans_cover(int64_t n, int64_t tile) { return spans_cover(n, tile, 0, tile); }

std::vector<Span> spans_cover(int64_t n, int64_t tile, int64_t wide_count, int64_t wide_tile) {
  std::vector<Span> out;
  for (int64_t off = 0; off < n;) {
    const int64_t width = static_cast<int64_t>(out.size()) < wide_count ? wide_tile : tile;
    out.push_back(Span{off, std::min(width, n - off)});
    off += width;
  }
  return out;
}

std::vector<Span> projection_spans(const TilingPlan& plan, const std::string& proj, int64_t n, bool pairs) {
  const auto even = [&](int64_t w) { return pairs ? w + w % 2 : w; };
  const auto wide = plan.wide_tiles.find(proj);
  if (wide == plan.wide_tiles.end()) return spans_cover(n, even(plan.n_tile.at(proj)));
  return spans_cover(n, even(plan.n_tile.at(proj)), wide->second, even(plan.wide_n_tile.at(proj)));
}

}  // namespace amk::schedule
