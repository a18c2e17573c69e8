// tools/bench/tune_search.h: the search of `amk-bench tune`, apart from any device: coordinate
// descent over a TuneSpace from a start preset. Each pass takes the axes in order and tries every
// value of one axis with the others at the incumbent's; the fastest candidate that passed its
// correctness check replaces the incumbent when it is faster by more than `min_gain` (run-to-run
// noise must not pick a schedule). Candidates that lower to the same ScheduleConfig are measured
// once. The measuring is a callback, so tests drive the search with made-up times.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "schedule/decode_preset.h"
#include "tools/bench/tune_space.h"

namespace amk::bench {

/// One candidate's measurement. `ok` false: refused (lowering, loading) or failed the correctness
/// check; `reason` says which and why, and the candidate can never be picked.
struct TuneMeasurement {
  bool ok = false;
  bool mismatch = false;      ///< refused by the correctness check (else by `code`)
  StatusCode code = StatusCode::Ok;  ///< refused: why (InvalidArgument, Unsupported, GpuRuntime, ...)
  std::string reason;
  std::vector<double> ms;     ///< ms/token per context length, in the order asked
  double objective_ms = 0.0;  ///< what is minimised: the sum of `ms`
};

struct TuneCandidate {
  schedule::DecodePreset preset;
  std::string key;    ///< the ScheduleConfig it lowers to (equal keys = the same schedule)
  std::string label;  ///< tune_label(preset)
  int pass = 0;       ///< the pass that measured it (0 = the start)
  TuneMeasurement m;
};

struct TuneSearchOptions {
  int max_passes = 2;       ///< passes over every axis; the search stops early after a pass that adopts nothing
  int max_candidates = 64;  ///< distinct schedules measured, the start included
  double min_gain = 0.005;  ///< a candidate must be faster than the incumbent by this fraction
};

struct TuneSearchResult {
  std::vector<TuneCandidate> candidates;  ///< every distinct schedule measured, in order; [0] is the start
  int best = -1;                          ///< index of the incumbent at the end; -1 when the start failed
  int passes = 0;                         ///< passes run
  bool budget_exhausted = false;          ///< stopped at max_candidates
};

/// (preset) -> the ScheduleConfig text it lowers to; (preset, key) -> its measurement.
using TuneKeyFn = std::function<std::string(const schedule::DecodePreset&)>;
using TuneMeasureFn = std::function<TuneMeasurement(const schedule::DecodePreset&, const std::string& key)>;

/// Run the search. The start is measured first; when it fails, nothing else is (best = -1).
TuneSearchResult tune_search(const TuneSpace& space, const schedule::DecodePreset& start, const TuneKeyFn& key_of,
                             const TuneMeasureFn& measure, const TuneSearchOptions& options);

/// Whether a re-timing confirms the search's pick: its objective below the start's by more than
/// `min_gain` (the same bar the search used), so a pick that won on one noisy measurement is dropped.
bool tune_gain_confirmed(double start_objective_ms, double best_objective_ms, double min_gain);

}  // namespace amk::bench
