// tools/bench/tune_bench.h: `amk-bench tune`: search the gpu-decode preset's knobs on the device for
// a model and target (tune_search.h over a tune_space.h space), each candidate lowered, loaded and
// gated by amk-bench decode's correctness check against the graphed cuBLAS baseline before it is
// timed; then the start and the best schedule re-timed side by side, alternating, and the best
// written as a ScheduleConfig file (`amk-bench decode --schedule`, `amk-compile --schedule`).
// The input is checked on the host first (config, space, output path), so bad input is exit 1 on
// any machine; only then is a GPU needed (exit 3 without one).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/decode_preset.h"
#include "schedule/model_config.h"
#include "tools/bench/tune_search.h"
#include "tools/bench/tune_space.h"

namespace amk::bench {

struct TuneBenchOptions {
  std::string model;              ///< HF config.json
  std::vector<int64_t> ctx{128};  ///< context lengths; the objective is the sum of their ms/token
  std::string space;              ///< tune space JSON file; empty = default_tune_space()
  std::string out;                ///< where the best ScheduleConfig goes; empty = written nowhere
  std::string target = "auto";
  int tokens = 20;       ///< timed launches per ctx and candidate (median)
  int warmup = 3;
  int check_steps = 8;   ///< greedy steps compared with the baseline, per candidate
  int rounds = 3;        ///< alternated re-timings of the start and the best at the end
  uint64_t seed = 1;
  TuneSearchOptions search;
  bool json = false;
};

/// Exit codes: 0 ok (the best schedule written to `out` when given); 1 bad input (config, space,
/// output path, a named target) or a refused start schedule; 3 no GPU, a GPU runtime error, or a
/// device that cannot run the VM; 4 the start schedule (the preset's defaults) failed the
/// correctness check, or a schedule that passed it in the search failed it when re-timed (it
/// decodes differently from run to run). Nothing is written unless the run succeeds, and then
/// atomically (ir::text_save_atomic). The search's pick is written only if the side-by-side
/// re-timing confirms its gain past min_gain; otherwise the preset's schedule is.
int run_tune_bench(const TuneBenchOptions& options);

/// The device half, called once the host checks passed (tune_device.cpp; tune_device_nogpu.cpp
/// in builds without the CUDA VM, which exits 3).
int run_tune_on_device(const TuneBenchOptions& options, const schedule::ModelConfig& model, const TuneSpace& space,
                       int64_t max_seq);

}  // namespace amk::bench
