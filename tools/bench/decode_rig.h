// tools/bench/decode_rig.h: one schedule of a model lowered, loaded on the GPU VM next to its
// graphed cuBLAS baseline, with the two things amk-bench does to it: the correctness check
// (amk's greedy tokens and logits against the baseline's, from an empty cache) and the timed
// launches at a context length. `amk-bench decode` measures one rig; `amk-bench tune` one per
// candidate schedule. CUDA builds only (decode_rig.cpp).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "loader/loader.h"
#include "schedule/model_config.h"
#include "tools/bench/baseline_adapter.h"
#include "vm/executor.h"

namespace amk::bench {

/// "h200" / "h100" / ... from the device name when `want` is "auto"; else the named target or file.
[[nodiscard]] Result<ir::GpuTarget> resolve_bench_target(const std::string& want, const std::string& device);

struct DecodeRig {
  ir::Program program;
  std::unique_ptr<loader::ProgramImage> image;
  std::unique_ptr<vm::Executor> exec;
  std::unique_ptr<DecodeBaseline> base;  ///< null with baseline "none"
  int64_t weight_bytes = 0;
  int64_t max_seq = 0;  ///< KV cache rows
  std::chrono::milliseconds watchdog = vm::LaunchOptions{}.deadline;  ///< each launch's deadline
  /// The timing emulation applied to the program (tools/bench/timing_emulation.h), or "".
  std::string emulation;

  /// One launch: `token` at `pos`; the next token into `*next`, the device time into `*device_us`.
  Status step(int32_t token, int32_t pos, int32_t* next, double* device_us, vm::LaunchTrace* trace = nullptr);
};

/// Lower `model` with `schedule`, load it with random bf16 weights of `seed` on the GPU VM, and make `baseline` ("cublas-graph" or
/// "none") over the executor's copies of the same weights. A timing emulation named in the
/// environment (apply_env_timing_emulation) rewrites the program first and needs baseline "none".
/// A lowering or loading refusal keeps its StatusCode (InvalidArgument, ...); the GPU's failures
/// are GpuRuntime / Unsupported.
[[nodiscard]] Result<std::unique_ptr<DecodeRig>> build_decode_rig(const schedule::ModelConfig& model,
                                                                 const ir::GpuTarget& target,
                                                                 const ir::ScheduleConfig& schedule, int64_t max_seq,
                                                                 uint64_t seed, const std::string& baseline);

/// What the correctness check found. `mismatch` is empty when it passed.
struct DecodeCheck {
  int steps = 0, agree = 0, near_ties = 0;
  double max_rel_l2 = 0.0, max_abs_logit_diff = 0.0;
  int32_t last_token = 1;  ///< amk's token after the last step: the token the timed launches feed
  std::string mismatch;    ///< why the check failed ("correctness check failed at step 3: ...")
};

/// Greedy decode of `steps` tokens from an empty cache, both decoders fed amk's tokens; each
/// step's logits must be within a relative L2 error of 0.1 and the tokens equal or a near-tie
/// (DecodeBaseline::Comparison). Without a baseline it only decodes (nothing to compare). A GPU
/// failure is the returned Status; a failed comparison is `out->mismatch` with an ok Status.
[[nodiscard]] Status check_decode_rig(DecodeRig& rig, int steps, DecodeCheck* out);

/// `warmup` + `tokens` launches of amk at context `ctx` (attending rows [0, ctx)); the median in ms.
[[nodiscard]] Status time_decode_rig(DecodeRig& rig, int32_t token, int64_t ctx, int warmup, int tokens, double* amk_ms);

/// The same for the rig's baseline (which it must have); the median in ms.
[[nodiscard]] Status time_baseline_rig(DecodeRig& rig, int32_t token, int64_t ctx, int warmup, int tokens,
                                       double* base_ms);

/// amk-bench's exit code for a failed rig step: 3 for the device's failures (GpuRuntime,
/// Unsupported, DeviceError, Timeout), 1 for refused input or a failed measurement (the rest).
int bench_exit_code(StatusCode code);

}  // namespace amk::bench
