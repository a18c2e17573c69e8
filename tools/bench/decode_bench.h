// tools/bench/decode_bench.h: `amk-bench decode`: single-stream decode of a Hugging Face Llama
// config (seeded random weights) on the GPU VM, against copy bandwidth and a graphed cuBLAS
// baseline on the same weights, in one run. The order is fixed so a latency is never printed
// without its correctness result: lower + load, copy bandwidth, a correctness check (amk's next
// tokens against the baseline's, from an empty cache), then per context length the timed launches
// of both. docs/PERFORMANCE.md records the figures and the commands.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/model_config.h"

namespace amk::bench {

/// How the built-in decode schedule cuts GEMV outputs into tiles.
struct DecodeTiling {
  /// > 0: each stage's projections together (q/k/v, o, gate/up, down) cut into this many tiles per
  /// SM, in equal rows: every SM streams the same share of every stage, whatever its size (a
  /// fixed tile size leaves most SMs idle in the small stages: q/k/v in 256 KiB tiles is 48 tasks
  /// on 132 SMs). 0: use tile_kib / tiles_per_sm. With stage_balance, 1 took the 1B shape from
  /// 2.52 to 2.15 ms/token on an H100 (docs/PERFORMANCE.md, row 26).
  int64_t tiles_per_stage = 1;
  int64_t tile_kib = 256;    ///< tiles_per_stage == 0 and > 0: tiles of about this many KiB of weights
  int64_t tiles_per_sm = 1;  ///< tiles_per_stage == 0 and tile_kib == 0: tiles of each projection per SM
  /// > 0: the LM head in this many tiles per SM whatever tile_kib says (0: as the others). One
  /// long streamed task per SM pays the per-task costs once for the largest projection (H200,
  /// Llama-3.2-1B: LM head stage 298 -> 168 us, 2.44 -> 2.31 ms/token).
  int64_t lm_head_tiles_per_sm = 1;
  /// How tasks go to SMs (ScheduleConfig sm_assignment): stage_balance evens each stage's bytes,
  /// which is what a stage's latency depends on (docs/SCHEDULE.md).
  std::string sm_assignment = "stage_balance";
  /// > 0: split-KV partitions per head (1..8); 0: one per 2048 rows of max_seq, at most 4.
  int64_t kv_partitions = 0;
  /// Fusion groups left out of the built-in schedule, each as its comma-separated op names in
  /// any order ("rope,kv_append"): a fusion's gain measured in the same run as the default.
  std::vector<std::string> drop_fusion;
};

struct DecodeBenchOptions {
  std::string model;                   ///< HF config.json
  std::vector<int64_t> ctx{128};       ///< context lengths (KV rows attended) to time
  std::string schedule;                ///< ScheduleConfig JSON; empty = the built-in decode schedule
  std::string target = "auto";         ///< target record; auto = from the device name
  std::string baseline = "cublas-graph";  ///< or "none"
  int tokens = 50;                     ///< timed launches per ctx (median)
  int warmup = 5;
  int check_steps = 8;                 ///< tokens compared with the baseline
  uint64_t seed = 1;                   ///< random weights
  bool json = false;
  bool profile = false;                ///< one traced launch per ctx, summarized
  std::string trace_out;               ///< Chrome trace of the profiled launches (implies profile)
  DecodeTiling tiling;                 ///< the built-in schedule's GEMV tiles
};

/// Exit codes (README, amk-bench --help): 0 ok; 1 bad input (config, schedule, target); 3 no GPU
/// or a GPU runtime failure; 4 amk's tokens disagree with the baseline (no latency is printed).
int run_decode_bench(const DecodeBenchOptions& options);

/// Whether `text` ("rope,kv_append", any order) names a group of the built-in schedule.
bool is_builtin_fusion_group(const std::string& text);

/// The schedule amk-bench uses when none is given: every fusion group, one query head per
/// attention task, split-KV sized to the longest context, GEMV tiles per `tiling`
/// (docs/PERFORMANCE.md says why).
std::string default_decode_schedule_json(const schedule::ModelConfig& model, int64_t num_sms, int64_t max_ctx,
                                         const DecodeTiling& tiling);

}  // namespace amk::bench
