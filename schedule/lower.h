// schedule/lower.h: lowering a Llama model + ScheduleConfig + GpuTarget into a decode-step program.
// The program is one token of batch-1 decode: IO_INPUT token -> EMBED -> layers -> final norm ->
// LM head (F32 logits, IO_OUTPUT) -> SAMPLE_ARGMAX (I32 next_token, IO_OUTPUT), with a `decode`
// section so a Session can step it. Stages form a chain (schedule/builder.h), so the result is
// deadlock- and race-free by construction; callers still run ir::validate() on it (amk-compile
// always does). docs/SCHEDULE.md documents what every knob changes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "schedule/fusion.h"
#include "schedule/model_config.h"
#include "schedule/pages.h"

namespace amk::schedule {

/// KV cache rows when LowerOptions::max_seq is 0 (capped by max_position_embeddings).
inline constexpr int64_t kDefaultMaxSeq = 4096;

/// The KV cache rows a lowering with LowerOptions::max_seq `requested` makes: `requested`, or for 0
/// min(max_position_embeddings, kDefaultMaxSeq); InvalidArgument when negative or beyond the model.
[[nodiscard]] Result<int64_t> resolve_max_seq(const ModelConfig& model, int64_t requested);

struct LowerOptions {
  /// KV cache rows (the longest context a Session can step to); 0 = min(max_position_embeddings,
  /// kDefaultMaxSeq). Must not exceed max_position_embeddings.
  int64_t max_seq = 0;
  /// Dtype of weights, activations and the KV cache: BF16, F16 or F32. Logits and split-KV
  /// partials are always F32.
  ir::DType dtype = ir::DType::BF16;
  /// Dtype of WEIGHT buffers when it differs from `dtype` (e.g. bf16 checkpoints run with f32
  /// activations); nullopt = `dtype`. The loader requires the checkpoint to hold this dtype.
  std::optional<ir::DType> weight_dtype;
};

/// Lower `model` for `target` under `config`. Knob errors are InvalidArgument naming the knob
/// (e.g. "tiling.attention.kv_partitions: 9 must be in [1, 8] ...").
[[nodiscard]] Result<ir::Program> lower(const ModelConfig& model, const ir::ScheduleConfig& config,
                                        const ir::GpuTarget& target, const LowerOptions& options = {});

/// "bf16" | "f16" | "f32" (case-insensitive) -> dtype; nullopt for anything else.
std::optional<ir::DType> lower_dtype_from_name(std::string_view name);
/// The lower-case name used by --dtype and program meta ("bf16").
std::string lower_dtype_name(ir::DType dtype);

}  // namespace amk::schedule
