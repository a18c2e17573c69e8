// tools/bench/decode_bench.h: `amk-bench decode`: single-stream decode of a Hugging Face Llama
// config (seeded random weights) on the GPU VM, against copy bandwidth and a graphed cuBLAS
// baseline on the same weights, in one run. The order is fixed so a latency is never printed
// without its correctness result: lower + load, copy bandwidth, a correctness check (amk's next
// tokens against the baseline's, from an empty cache), then per context length the timed launches
// of both. docs/PERFORMANCE.md records the figures and the commands.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "schedule/decode_preset.h"

namespace amk::bench {

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
  int watchdog_ms = 30000;             ///< per-launch deadline (a profiler replaying launches needs more)
  schedule::DecodePreset tiling;       ///< the built-in schedule (the gpu-decode preset)
  /// The preset's fast_sms: a count, or "auto" (measure_sm_speeds' count of fast SMs). The
  /// default is env AMK_FAST_SMS, else "0" (a measuring knob while the gain is measured).
  std::string fast_sms = default_fast_sms();

  static std::string default_fast_sms() {
    const char* env = std::getenv("AMK_FAST_SMS");
    return env != nullptr && *env != '\0' ? std::string(env) : std::string("0");
  }
};

/// KV cache rows amk-bench gives a run (decode, tune): the longest context, or the correctness
/// check's steps, rounded up to 256.
inline int64_t bench_max_seq(int64_t max_ctx, int check_steps) {
  const int64_t rows = max_ctx > check_steps ? max_ctx : int64_t{check_steps};
  return (rows + 255) / 256 * 256;
}

/// Exit codes (README, amk-bench --help): 0 ok; 1 bad input (config, schedule, target); 3 no GPU
/// or a GPU runtime failure; 4 amk's tokens disagree with the baseline (no latency is printed).
int run_decode_bench(const DecodeBenchOptions& options);

}  // namespace amk::bench
