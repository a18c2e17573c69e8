// tools/bench/tune_device.cpp: the device half of `amk-bench tune` (tune_bench.h). CUDA builds only
// (tune_device_nogpu.cpp otherwise). One DecodeRig per candidate, freed before the next, so the
// device holds one model at a time during the search and two (start and best) for the re-timing.
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>

#include <nlohmann/json.hpp>

#include "schedule/schedule_config.h"
#include "ir/json.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/copy_bandwidth.h"
#include "tools/bench/decode_rig.h"
#include "tools/bench/tune_bench.h"
#include "vm/cuda/cuda_executor.h"

namespace amk::bench {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 1, kExitGpu = 3, kExitMismatch = 4;

/// A failure after which the device cannot be trusted for the next candidate (a launch that failed,
/// timed out or reported an error). A refusal of one schedule (InvalidArgument, Unsupported, a
/// lowering's Internal) is not: that candidate is rejected and the search goes on.
bool is_device_failure(const Status& s) {
  return s.code() == StatusCode::GpuRuntime || s.code() == StatusCode::DeviceError || s.code() == StatusCode::Timeout;
}

/// Record a refusal in `m`, and in `device_failure` when it is the device's.
void refuse(TuneMeasurement* m, const Status& s, Status* device_failure) {
  m->code = s.code();
  m->reason = std::string(status_code_name(s.code())) + ": " + s.message();
  if (is_device_failure(s)) *device_failure = s;
}

/// A candidate's rig, built and checked; `m` says why not when it returns null.
std::unique_ptr<DecodeRig> checked_rig(const TuneBenchOptions& o, const schedule::ModelConfig& model,
                                       const ir::GpuTarget& target, const std::string& key, int64_t max_seq,
                                       TuneMeasurement* m, Status* device_failure, int32_t* token) {
  Result<ir::ScheduleConfig> cfg = schedule::schedule_config_from_json_text(key, "candidate schedule");
  if (!cfg) {
    refuse(m, cfg.status(), device_failure);
    return nullptr;
  }
  Result<std::unique_ptr<DecodeRig>> rig = build_decode_rig(model, target, *cfg, max_seq, o.seed, "cublas-graph");
  if (!rig) {
    refuse(m, rig.status(), device_failure);
    return nullptr;
  }
  DecodeCheck check;
  Status s = check_decode_rig(**rig, o.check_steps, &check);
  if (!s) {
    refuse(m, s, device_failure);
    return nullptr;
  }
  if (!check.mismatch.empty()) {
    m->mismatch = true;
    m->reason = check.mismatch;
    return nullptr;
  }
  *token = check.last_token;
  return std::move(*rig);
}

/// Lower, load, check and time one candidate.
TuneMeasurement measure_candidate(const TuneBenchOptions& o, const schedule::ModelConfig& model,
                                  const ir::GpuTarget& target, const std::string& key, int64_t max_seq,
                                  Status* device_failure) {
  TuneMeasurement m;
  int32_t token = 1;
  std::unique_ptr<DecodeRig> rig = checked_rig(o, model, target, key, max_seq, &m, device_failure, &token);
  if (!rig) return m;
  for (int64_t ctx : o.ctx) {
    double ms = 0.0;
    Status s = time_decode_rig(*rig, token, ctx, o.warmup, o.tokens, &ms);
    if (!s) {
      refuse(&m, s, device_failure);
      return m;
    }
    m.ms.push_back(ms);
    m.objective_ms += ms;
  }
  m.ok = true;
  return m;
}

std::string ms_list(const std::vector<double>& ms) {
  std::string out;
  for (double v : ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3f", out.empty() ? "" : " / ", v);
    out += buf;
  }
  return out;
}

/// The exit code of a schedule refused with `m`: a failed check is 4, the rest as decode's
/// (bench_exit_code: the device's failures 3, a refused lowering 1).
int refusal_exit_code(const TuneMeasurement& m) { return m.mismatch ? kExitMismatch : bench_exit_code(m.code); }

/// The start and the best re-timed in alternation, `rounds` times each (which goes first swaps
/// every round, so neither always follows the other), on rigs held side by side; medians per ctx
/// into start_ms / best_ms. A rig that cannot be had again is `*refusal` (exit code by
/// refusal_exit_code: a best that passed its check in the search and fails it now decodes
/// differently from run to run).
Status retime_side_by_side(const TuneBenchOptions& o, const schedule::ModelConfig& model, const ir::GpuTarget& target,
                           const std::string& start_key, const std::string& best_key, int64_t max_seq,
                           std::vector<double>* start_ms, std::vector<double>* best_ms, TuneMeasurement* refusal) {
  Status failure;
  int32_t tokens[2] = {1, 1};
  std::unique_ptr<DecodeRig> rigs[2];
  const std::string* keys[2] = {&start_key, &best_key};
  for (int k = 0; k < 2; ++k) {
    rigs[k] = checked_rig(o, model, target, *keys[k], max_seq, refusal, &failure, &tokens[k]);
    if (!rigs[k])
      return Status(StatusCode::GpuRuntime, std::string("re-timing the ") + (k == 0 ? "start" : "best") + ": " +
                                                refusal->reason + " (it passed the same check in the search)");
  }
  std::vector<std::vector<double>> runs[2] = {std::vector<std::vector<double>>(o.ctx.size()),
                                              std::vector<std::vector<double>>(o.ctx.size())};
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t i = 0; i < o.ctx.size(); ++i) {
      for (int k : {r % 2, 1 - r % 2}) {
        double ms = 0.0;
        Status s = time_decode_rig(*rigs[k], tokens[k], o.ctx[i], o.warmup, o.tokens, &ms);
        if (!s) {
          refusal->code = s.code();
          return s;
        }
        runs[k][i].push_back(ms);
      }
    }
  }
  for (size_t i = 0; i < o.ctx.size(); ++i) {
    start_ms->push_back(tools::median(runs[0][i]));
    best_ms->push_back(tools::median(runs[1][i]));
  }
  return Status::ok();
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

int run_tune_on_device(const TuneBenchOptions& o, const schedule::ModelConfig& model, const TuneSpace& space,
                       int64_t max_seq) {
  const auto fail = [&](int code, const std::string& what) {
    return bench_fail("tune", o.json, code, bench_error_code(code), what);
  };
  const std::string device = vm::cuda_device_name();
  if (device.rfind("no GPU", 0) == 0) return fail(kExitGpu, device);
  Result<ir::GpuTarget> target = resolve_bench_target(o.target, device);
  if (!target) return fail(kExitBadInput, target.status().message());
  Result<CopyBandwidth> bw = measure_copy_bandwidth();
  if (!bw) return fail(kExitGpu, bw.status().message());
  if (!o.json) {
    std::printf("device: %s\n", device.c_str());
    std::printf("model: %s (target %s), max_seq %lld, ctx", o.model.c_str(), target->name.c_str(),
                static_cast<long long>(max_seq));
    for (int64_t c : o.ctx) std::printf(" %lld", static_cast<long long>(c));
    std::printf("; objective: the sum of ms/token over ctx\n");
    std::printf("%4s %-58s %s\n", "#", "candidate (knobs that differ from the preset)", "ms/token per ctx");
    std::fflush(stdout);
  }

  Status device_failure;
  const auto key_of = [&](const schedule::DecodePreset& p) {
    return schedule::decode_preset_json(model, *target, max_seq, p);
  };
  int counted = 0;
  const auto measure = [&](const schedule::DecodePreset& p, const std::string& key) {
    TuneMeasurement m;
    if (!device_failure) {
      m.code = device_failure.code();
      m.reason = "not measured: an earlier candidate failed on the device (" + device_failure.message() + ")";
    } else {
      m = measure_candidate(o, model, *target, key, max_seq, &device_failure);
    }
    if (!o.json) {
      std::printf("%4d %-58s %s\n", counted, tune_label(p).c_str(),
                  m.ok ? ms_list(m.ms).c_str() : ("rejected: " + m.reason).c_str());
      std::fflush(stdout);
    }
    ++counted;
    return m;
  };
  const TuneSearchResult r = tune_search(space, schedule::DecodePreset{}, key_of, measure, o.search);
  if (!device_failure) return fail(kExitGpu, device_failure.message());
  if (r.best < 0) {
    // tune_search measures the start before anything else, so there is one candidate.
    const TuneMeasurement& m = r.candidates.at(0).m;
    return fail(refusal_exit_code(m), "the start schedule (the gpu-decode preset) was rejected: " + m.reason);
  }
  const TuneCandidate& start = r.candidates[0];
  const TuneCandidate& found = r.candidates[static_cast<size_t>(r.best)];

  // The search's pick stands only if the side-by-side re-timing confirms its gain; otherwise the
  // gain was the noise of single measurements and the preset's schedule is the answer.
  std::vector<double> start_ms = start.m.ms, best_ms = found.m.ms;
  bool confirmed = true;
  if (r.best != 0) {
    start_ms.clear();
    best_ms.clear();
    TuneMeasurement refusal;
    Status s = retime_side_by_side(o, model, *target, start.key, found.key, max_seq, &start_ms, &best_ms, &refusal);
    if (!s) return fail(refusal_exit_code(refusal), s.message());
    confirmed = tune_gain_confirmed(sum(start_ms), sum(best_ms), o.search.min_gain);
  }
  const int best_index = confirmed ? r.best : 0;
  const TuneCandidate& best = r.candidates[static_cast<size_t>(best_index)];
  const double speedup = sum(start_ms) / sum(best_ms);  // the search's pick against the preset
  std::string schedule_text = nlohmann::ordered_json::parse(best.key).dump(2) + "\n";
  if (!o.out.empty()) {
    Status s = ir::text_save_atomic(o.out, schedule_text);
    if (!s) return fail(kExitBadInput, s.message());
  }

  if (o.json) {
    tools::Json j = bench_model_document("tune", device, o.model, target->name);
    j["max_seq"] = max_seq;
    j["ctx"] = o.ctx;
    j["copy_bandwidth_gbs"] = bw->gbs;
    tools::Json sp = tools::Json::object();
    for (const TuneAxis& a : space.axes) sp[a.name] = a.values;
    j["space"] = sp;
    j["search"] = {{"passes", r.passes},
                   {"max_passes", o.search.max_passes},
                   {"max_candidates", o.search.max_candidates},
                   {"min_gain", o.search.min_gain},
                   {"budget_exhausted", r.budget_exhausted}};
    j["candidates"] = tools::Json::array();
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      const TuneCandidate& c = r.candidates[i];
      tools::Json cj{{"index", i}, {"pass", c.pass}, {"label", c.label}, {"knobs", tune_preset_json(c.preset)},
                     {"ok", c.m.ok}};
      cj["code"] = c.m.ok ? tools::Json(nullptr) : tools::Json(c.m.mismatch ? "Mismatch" : status_code_name(c.m.code));
      cj["reason"] = c.m.ok ? tools::Json(nullptr) : tools::Json(c.m.reason);
      cj["ms_per_token"] = c.m.ms;
      cj["objective_ms"] = c.m.ok ? tools::Json(c.m.objective_ms) : tools::Json(nullptr);
      j["candidates"].push_back(cj);
    }
    j["comparison"] = {{"searched_best", r.best},
                       {"rounds", r.best != 0 ? o.rounds : 0},
                       {"start_ms_per_token", start_ms},
                       {"searched_best_ms_per_token", best_ms},
                       {"speedup", speedup},
                       {"confirmed", confirmed}};
    j["best"] = {{"index", best_index}, {"label", best.label}, {"knobs", tune_preset_json(best.preset)},
                 {"schedule", nlohmann::ordered_json::parse(best.key)}};
    j["out"] = o.out.empty() ? tools::Json(nullptr) : tools::Json(o.out);
    std::cout << tools::json_text(j);
    return kExitOk;
  }
  std::printf("searched %zu distinct schedule(s) in %d pass(es)%s\n", r.candidates.size(), r.passes,
              r.budget_exhausted ? " (stopped at --max-candidates)" : "");
  if (r.best == 0) {
    std::printf("the preset's defaults were not beaten by more than %.1f%%: ms/token %s\n", 100.0 * o.search.min_gain,
                ms_list(best_ms).c_str());
  } else {
    std::printf("#%d %s re-timed beside the preset, %d alternated round(s), median ms/token per ctx "
                "(copy bandwidth %.0f GB/s):\n",
                r.best, found.label.c_str(), o.rounds, bw->gbs);
    std::printf("%8s %12s %12s %9s\n", "ctx", "preset", "candidate", "speedup");
    for (size_t i = 0; i < o.ctx.size(); ++i)
      std::printf("%8lld %12.3f %12.3f %8.3fx\n", static_cast<long long>(o.ctx[i]), start_ms[i], best_ms[i],
                  start_ms[i] / best_ms[i]);
    if (!confirmed)
      std::printf("the re-timing did not confirm a gain of more than %.1f%%: keeping the preset\n",
                  100.0 * o.search.min_gain);
  }
  std::printf("best: #%d %s\n", best_index, best.label.c_str());
  if (!o.out.empty()) std::printf("wrote %s (amk-bench decode --schedule, amk-compile --schedule)\n", o.out.c_str());
  return kExitOk;
}

}  // namespace amk::bench
