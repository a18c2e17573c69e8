// tools/bench/baseline_adapter.h: the baseline amk-bench decode compares against, behind a small
// interface: fed the same tokens at the same positions as amk, it says its next token (and whether
// a disagreement is a near-tie of its own logits), and times its steps with stream events.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "schedule/model_config.h"
#include "vm/executor.h"

namespace amk::bench {

class DecodeBaseline {
 public:
  virtual ~DecodeBaseline() = default;
  /// What one compared step found.
  struct Comparison {
    int32_t next = -1;          ///< the baseline's argmax
    bool agree = false;         ///< next == amk's token
    bool within_noise = false;  ///< they differ, but by less than the two decoders' logits do
    double max_abs_diff = 0.0;  ///< max |amk logit - baseline logit|
    double rel_l2 = 0.0;        ///< ||amk - baseline|| / ||baseline|| over the logits
  };
  /// Decode `token` at `pos` and compare with amk's logits and token for the same step. Two
  /// correct bf16 decoders differ by rounding (different fusion, accumulation order), so their
  /// logits differ by some delta; a different argmax is accepted only when the baseline's own
  /// logit for amk's token is within 2 * max |delta| of its maximum, i.e. when that gap is
  /// smaller than the measured disagreement of the two decoders.
  virtual Status step(int32_t token, int32_t pos, int32_t amk_token, const std::vector<float>& amk_logits,
                      Comparison* out) = 0;
  /// `warmup` + `iters` steps at `pos`; `*ms` gets the last `iters` step times.
  virtual Status time_steps(int32_t token, int32_t pos, int warmup, int iters, std::vector<double>* ms) = 0;
};

/// "cublas-graph": a CUDA-graphed cuBLAS decode reading the device copies of `program`'s weight
/// buffers held by `exec` (a GPU executor), with its own KV caches of `max_seq` rows.
[[nodiscard]] Result<std::unique_ptr<DecodeBaseline>> make_baseline(const std::string& name,
                                                                   const schedule::ModelConfig& model,
                                                                   const ir::Program& program,
                                                                   const vm::Executor& exec, int64_t max_seq);

}  // namespace amk::bench
