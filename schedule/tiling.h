// schedule/tiling.h: the `tiling` knob resolved into tile sizes for one model (internal).
// GEMV outputs are cut into column tiles of N_tile (the last one may be narrower), so the tiles of
// one projection cover its output exactly once; attention is cut into head groups x KV partitions.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "schedule/model_config.h"

namespace amk::schedule {

/// Default GEMV tile width when neither `gemv` nor the projection sets N_tile.
inline constexpr int64_t kDefaultGemvNTile = 256;
/// Split-KV partitions: ATTENTION_COMBINE takes at most 8 operands (the ABI's input cap), each
/// one partial or a rank-2 stack of them, and merges at most ir::kMaxCombinePartials in all. Up
/// to 8 partitions get an operand each; more must be a multiple of 8 (P / 8 rows per operand).
inline constexpr int64_t kMaxKvPartitions = ir::kMaxCombinePartials;
inline constexpr int64_t kMaxCombineOperands = ir::kMaxInputs;

/// The projections a `tiling` entry may name, in lowering order.
const std::vector<std::string>& projection_names();

/// A half-open range [off, off + len).
struct Span {
  int64_t off = 0;
  int64_t len = 0;
};

/// The tiling knob resolved for one model: what emit_* cuts outputs and attention into.
struct TilingPlan {
  std::map<std::string, int64_t> n_tile;  ///< per projection name
  /// Per projection: its first wide_tiles[p] tiles are wide_n_tile[p] wide, the rest n_tile[p]
  /// (0 = all n_tile). The wide tiles are for the SMs that stream faster (docs/SM_BALANCE.md):
  /// they come first in their stage, where a capacity-weighted stage_balance
  /// (ScheduleConfig::fast_sms) puts them on the same workers in every stage.
  std::map<std::string, int64_t> wide_tiles;
  std::map<std::string, int64_t> wide_n_tile;
  int64_t kv_partitions = 1;              ///< split-KV partitions P (1 = no combine)
  int64_t heads_per_task = 1;             ///< query heads per ATTENTION_TILE task
  /// Logits per SAMPLE_ARGMAX tile; 0 = one whole SAMPLE_ARGMAX task (no tiles, no combine).
  int64_t argmax_tile = 0;

  /// Cache rows of partition p: [p*S/P, (p+1)*S/P) (integer division), so the P slices cover
  /// [0, S) exactly, differ in length by at most one row, and none is empty (P <= S).
  Span kv_partition(int64_t p, int64_t max_seq) const;
  /// Partials stacked per ATTENTION_COMBINE operand: 1 up to 8 partitions, else P / 8. Partition
  /// p writes row p / 8 of operand p % 8, so the combine (row by row) merges them in partition order.
  int64_t kv_rows() const { return kv_partitions > kMaxCombineOperands ? kv_partitions / kMaxCombineOperands : 1; }
};

/// Resolve and check `config.tiling` for `model` at `max_seq`. Unknown archetypes or params and
/// out-of-range values are InvalidArgument naming the knob, e.g. "tiling.attention.kv_partitions".
[[nodiscard]] Result<TilingPlan> tiling_plan(const ir::ScheduleConfig& config, const ModelConfig& model,
                                             int64_t max_seq);

/// Consecutive spans of `tile` covering [0, n) exactly; the last may be shorter.
std::vector<Span> spans_cover(int64_t n, int64_t tile);

/// Consecutive spans covering [0, n) exactly: up to `wide_count` of `wide_tile` first, then spans
/// of `tile`; the last may be shorter. wide_count 0 is spans_cover(n, tile).
std::vector<Span> spans_cover(int64_t n, int64_t tile, int64_t wide_count, int64_t wide_tile);

/// The spans of projection `proj`'s output of width n under `plan` (its N_tile and wide tiles),
/// with every width rounded up to even when `pairs` (rope pairs must not straddle two tiles).
std::vector<Span> projection_spans(const TilingPlan& plan, const std::string& proj, int64_t n, bool pairs = false);

}  // namespace amk::schedule
