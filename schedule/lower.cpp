// schedule/lower.cpp: the lowering driver: check knobs, emit the stage chain, then resolve the
// SM assignment and the page binding, and stamp meta/target/config/decode.
// Deterministic: the same inputs give the same Program (and the same JSON bytes), which is what
// lets examples/ be regenerated and diffed.
#include "schedule/lower.h"

#include <algorithm>
#include <cctype>

#include "schedule/emit.h"
#include "schedule/schedule_config.h"
#include "schedule/sm_assign.h"
#include "schedule/tiling.h"

namespace amk::schedule {
namespace {

constexpr int64_t kInt32Max = 2147483647;

Status invalid(const std::string& msg) { return Status(StatusCode::InvalidArgument, msg); }

}  // namespace

Result<int64_t> resolve_max_seq(const ModelConfig& m, int64_t requested) {
  if (requested == 0) return std::min(m.max_position_embeddings, kDefaultMaxSeq);
  if (requested < 0) return invalid("max_seq: " + std::to_string(requested) + " must be positive");
  if (requested > m.max_position_embeddings) {
    return invalid("max_seq: " + std::to_string(requested) + " exceeds the model's max_position_embeddings (" +
                   std::to_string(m.max_position_embeddings) + ")");
  }
  return requested;
}

namespace {

// Every int param must fit int32 (amk_params_t); the widest are vocab-sized offsets and the
// KV-cache row width, so checking the model's sizes once covers every task.
Status check_int32_sizes(const ModelConfig& m, int64_t max_seq) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"q_dim (num_attention_heads * head_dim)", m.q_dim()},
      {"KV cache elements (max_seq * kv_dim)", max_seq * m.kv_dim()},
      {"num_attention_heads * (head_dim + 2)", m.num_attention_heads * (m.head_dim + 2)},
  };
  for (const auto& [what, n] : sizes) {
    if (n > kInt32Max) return invalid(std::string(what) + " = " + std::to_string(n) + " does not fit int32");
  }
  return Status::ok();
}

nlohmann::ordered_json decode_section(ir::BufferId token, ir::BufferId logits, ir::BufferId next,
                                      int64_t max_seq, int64_t vocab) {
  nlohmann::ordered_json d;
  d["token_input"] = token.value;
  d["logits"] = logits.value;
  d["next_token"] = next.value;
  d["max_seq"] = max_seq;
  d["vocab"] = vocab;
  return d;
}

}  // namespace

std::optional<ir::DType> lower_dtype_from_name(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (s == "bf16") return ir::DType::BF16;
  if (s == "f16") return ir::DType::F16;
  if (s == "f32") return ir::DType::F32;
  return std::nullopt;
}

std::string lower_dtype_name(ir::DType d) {
  switch (d) {
    case ir::DType::BF16: return "bf16";
    case ir::DType::F16: return "f16";
    case ir::DType::F32: return "f32";
    default: break;
  }
  std::string s(ir::dtype_name(d));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

Result<ir::Program> lower(const ModelConfig& model, const ir::ScheduleConfig& config, const ir::GpuTarget& target,
                          const LowerOptions& options) {
  if (options.dtype != ir::DType::BF16 && options.dtype != ir::DType::F16 && options.dtype != ir::DType::F32) {
    return invalid("dtype: " + lower_dtype_name(options.dtype) + " is not supported (use bf16, f16 or f32)");
  }
  if (Status s = schedule_config_check(config, target); !s) return s;
  auto max_seq = resolve_max_seq(model, options.max_seq);
  if (!max_seq) return max_seq.status();
  if (Status s = check_int32_sizes(model, *max_seq); !s) return s;
  auto tiling = tiling_plan(config, model, *max_seq);
  if (!tiling) return tiling.status();
  auto fusion = fusion_plan(config.fusion_grouping);
  if (!fusion) return fusion.status();
  if (Status s = fusion_check_tiling(*fusion, config, model); !s) return s;

  LowerContext c{model, *tiling, *fusion, options.dtype, options.weight_dtype.value_or(options.dtype), *max_seq, ProgramBuilder{}, {}, {}, {}, {}};
  emit_embed(c);
  for (int64_t layer = 0; layer < model.num_hidden_layers; ++layer) emit_layer(c, layer);
  ir::BufferId logits, next_token;
  emit_head(c, logits, next_token);

  const std::vector<int32_t> task_stage = c.b.task_stage();
  ir::Program p = c.b.take();
  p.meta["model"] = model.name;
  p.meta["gpu"] = target.name;
  p.meta["regime"] = "decode";
  p.meta["dtype"] = lower_dtype_name(options.dtype);
  if (options.weight_dtype && *options.weight_dtype != options.dtype)
    p.meta["weight_dtype"] = lower_dtype_name(*options.weight_dtype);
  // F32 atomic adds sum in arrival order: the logits' last bits vary from run to run (docs/FOLD.md).
  if (fusion->mlp_fold) {
    p.meta["reproducible"] = false;
    p.meta["reproducible_note"] = "the MLP fold adds into h with F32 atomic adds: logits vary in the last bits";
  }
  p.target = target;
  p.config = config;
  p.decode = decode_section(c.token, logits, next_token, *max_seq, model.vocab_size);
  if (Status s = assign_sms(p, config, target); !s) return s;
  if (Status s = allocate_pages(p, config.page_allocation, task_stage); !s) return s;
  return p;
}

}  // namespace amk::schedule
