// tools/bench/decode_bench.cpp: see decode_bench.h. CUDA builds only (decode_bench_nogpu.cpp
// otherwise). The lowering, loading, correctness check and timing are the DecodeRig's
// (decode_rig.h), which amk-bench tune shares.
#include "tools/bench/decode_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/copy_bandwidth.h"
#include "tools/bench/decode_rig.h"
#include "tools/bench/trace_summary.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/cuda/sm_speed.h"
#include "vm/trace_export.h"

namespace amk::bench {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 1, kExitGpu = 3, kExitMismatch = 4;

/// One line on the built-in schedule a run measured (its full knobs are in the --json document).
std::string preset_summary(const schedule::DecodePreset& p, const schedule::ModelConfig& model,
                           const ir::GpuTarget& target, int64_t max_seq) {
  std::ostringstream out;
  out << "built-in gpu-decode preset (" << p.sm_assignment << ", ";
  if (p.tiles_per_stage > 0) out << p.tiles_per_stage << " tile(s) per SM per stage";
  else if (p.tile_kib > 0) out << p.tile_kib << " KiB tiles";
  else out << p.tiles_per_sm << " tile(s) per SM per projection";
  out << ", " << schedule::decode_preset_kv_partitions(p, model, max_seq) << " KV partition(s), "
      << schedule::decode_preset_heads_per_task(p, model, max_seq) << " head(s) per attention task";
  for (const std::string& g : p.drop_fusion) out << ", without " << g;
  // What the preset resolved: the auto fold depends on the target.
  if (schedule::decode_preset_mlp_fold(p, model, target, max_seq))
    out << ", MLP fold (F32 atomic adds: logits not bit-reproducible; --no-mlp-fold keeps them so)";
  // What the preset resolved (AMK_ROPE_IN_QKV may override the knob), so an A/B names its side.
  out << (schedule::decode_preset_rope_in_qkv(p, model, max_seq) ? ", rope in the q / k GEMVs" : ", rope in attention");
  if (p.fast_sms > 0) out << ", " << p.fast_sms << " fast SMs with tiles " << p.fast_sm_ratio << "x as wide";
  out << ")";
  return out.str();
}

struct CtxResult {
  int64_t ctx = 0;
  double amk_ms = 0.0, base_ms = -1.0;
  std::string profile;
};

}  // namespace

int run_decode_bench(const DecodeBenchOptions& o) {
  const auto fail = [&](int code, const std::string& what) {
    return bench_fail("decode", o.json, code, bench_error_code(code), what);
  };
  if (o.ctx.empty() || o.tokens < 1 || o.warmup < 0 || o.check_steps < 1)
    return fail(kExitBadInput, "--ctx needs at least one length; --tokens and --check-steps must be >= 1");
  const std::string device = vm::cuda_device_name();
  if (device.rfind("no GPU", 0) == 0) return fail(kExitGpu, device);
  Result<schedule::ModelConfig> model = schedule::model_config_load(o.model);
  if (!model) return fail(kExitBadInput, model.status().message());
  Result<ir::GpuTarget> target = resolve_bench_target(o.target, device);
  if (!target) return fail(kExitBadInput, target.status().message());
  const int64_t max_ctx = *std::max_element(o.ctx.begin(), o.ctx.end());
  if (*std::min_element(o.ctx.begin(), o.ctx.end()) < 1) return fail(kExitBadInput, "--ctx lengths must be >= 1");
  const int64_t max_seq = bench_max_seq(max_ctx, o.check_steps);
  // Wide tiles for the SMs that stream faster: how many, measured here when asked (auto).
  schedule::DecodePreset preset = o.tiling;
  std::string fast_note;
  if (o.fast_sms == "auto") {
    Result<vm::gpuvm::SmSpeeds> speeds = vm::gpuvm::measure_sm_speeds();
    if (!speeds) return fail(kExitGpu, "measuring each SM's streaming speed: " + speeds.status().message());
    preset.fast_sms = speeds->fast;
    std::ostringstream note;
    note << speeds->fast << " SMs measured fast (" << speeds->fast_speed << "x the median)";
    fast_note = note.str();
  } else {
    char* end = nullptr;
    const long n = std::strtol(o.fast_sms.c_str(), &end, 10);
    if (o.fast_sms.empty() || *end != '\0' || n < 0 || n > 1024)
      return fail(kExitBadInput, "--fast-sms (or AMK_FAST_SMS) \"" + o.fast_sms + "\" is not auto or a count in [0, 1024]");
    preset.fast_sms = n;
  }

  // The built-in schedule's knobs (the gpu-decode preset), or --schedule's file.
  const std::string preset_json =
      o.schedule.empty() ? schedule::decode_preset_json(*model, *target, max_seq, preset) : std::string();
  Result<ir::ScheduleConfig> cfg = o.schedule.empty()
                                       ? schedule::schedule_config_from_json_text(preset_json, "built-in decode schedule")
                                       : schedule::schedule_config_load(o.schedule);
  if (!cfg) return fail(kExitBadInput, cfg.status().message());
  Result<std::unique_ptr<DecodeRig>> built =
      build_decode_rig(*model, *target, *cfg, max_seq, o.seed, o.baseline);
  if (!built) return fail(bench_exit_code(built.status().code()), built.status().message());
  DecodeRig& amk = **built;
  amk.watchdog = std::chrono::milliseconds(o.watchdog_ms);
  const vm::GpuKernelReport* rep = vm::gpu_kernel_report(*amk.exec);

  Result<CopyBandwidth> bw = measure_copy_bandwidth();
  if (!bw) return fail(kExitGpu, bw.status().message());

  // Correctness first: a latency without a matching correctness result is never printed.
  DecodeCheck check;
  Status s = check_decode_rig(amk, o.check_steps, &check);
  if (!s) return fail(bench_exit_code(s.code()), s.message());
  if (!check.mismatch.empty()) return fail(kExitMismatch, check.mismatch + "; no latency is reported");
  const int32_t token = check.last_token;

  std::vector<CtxResult> results;
  std::vector<vm::LaunchTrace> traces;
  for (int64_t ctx : o.ctx) {
    CtxResult r;
    r.ctx = ctx;
    s = time_decode_rig(amk, token, ctx, o.warmup, o.tokens, &r.amk_ms);
    if (!s) return fail(kExitGpu, s.message());
    if (o.profile || !o.trace_out.empty()) {
      vm::LaunchTrace tr;
      s = amk.step(token, static_cast<int32_t>(ctx - 1), nullptr, nullptr, &tr);
      if (!s) return fail(kExitGpu, "amk traced step: " + s.message());
      r.profile = summarize_trace(amk.program, tr);
      traces.push_back(std::move(tr));
    }
    if (amk.base) {
      s = time_baseline_rig(amk, token, ctx, o.warmup, o.tokens, &r.base_ms);
      if (!s) return fail(kExitGpu, s.message());
    }
    results.push_back(r);
  }
  if (!o.trace_out.empty()) {
    s = vm::trace_save_chrome(o.trace_out, amk.program, traces,
                              vm::TraceInfo{o.model, "cuda", rep != nullptr ? rep->workers : 0});
    if (!s) return fail(kExitBadInput, s.message());
  }

  const double wbytes = static_cast<double>(amk.weight_bytes);
  const auto pct = [&](double ms) { return 100.0 * wbytes / (ms * 1e-3) / (bw->gbs * 1e9); };
  if (o.json) {
    tools::Json j = bench_model_document("decode", device, o.model, target->name);
    // What was measured: the built-in schedule's knobs in full, or the schedule file's path.
    j["schedule"] = preset_json.empty() ? nlohmann::ordered_json(o.schedule) : nlohmann::ordered_json::parse(preset_json);
    j["weight_bytes"] = amk.weight_bytes;
    j["copy_bandwidth_gbs"] = bw->gbs;
    j["check"] = {{"steps", o.check_steps},  {"agree", check.agree},          {"near_ties", check.near_ties},
                  {"baseline", o.baseline}, {"max_rel_l2", check.max_rel_l2}, {"max_abs_logit_diff", check.max_abs_logit_diff}};
    if (rep != nullptr) j["kernel"] = rep->summary();
    if (!fast_note.empty()) j["fast_sms_measured"] = fast_note;
    if (!amk.emulation.empty()) j["emulation"] = amk.emulation;
    for (const CtxResult& r : results) {
      nlohmann::ordered_json c{{"ctx", r.ctx}, {"amk_ms_per_token", r.amk_ms}, {"amk_pct_of_copy_bw", pct(r.amk_ms)}};
      if (r.base_ms > 0) {
        c["baseline_ms_per_token"] = r.base_ms;
        c["baseline_pct_of_copy_bw"] = pct(r.base_ms);
        c["speedup_vs_baseline"] = r.base_ms / r.amk_ms;
      }
      j["results"].push_back(c);
    }
    std::cout << tools::json_text(j);
  } else {
    std::printf("device: %s\n", device.c_str());
    if (rep != nullptr) std::printf("kernel: %s\n", rep->summary().c_str());
    std::printf("model: %s (target %s), %zu tasks, weights %.1f MB (bf16, seeded random, seed %llu)\n",
                o.model.c_str(), target->name.c_str(), amk.program.tasks.size(), wbytes / 1e6,
                static_cast<unsigned long long>(o.seed));
    std::printf("schedule: %s\n", preset_json.empty() ? o.schedule.c_str() : preset_summary(preset, *model, *target, amk.max_seq).c_str());
    if (!fast_note.empty()) std::printf("fast SMs: %s\n", fast_note.c_str());
    std::printf("copy bandwidth: %.0f GB/s (D2D %zu MiB, read + write)\n", bw->gbs, bw->bytes >> 20);
    if (!amk.emulation.empty()) std::printf("emulation: %s\n", amk.emulation.c_str());
    if (amk.base)
      std::printf("check: %d/%d steps same next token as %s, %d more within the logits' difference; logits "
                  "relative L2 error <= %.4f, max |diff| %.4f\n",
                  check.agree, o.check_steps, o.baseline.c_str(), check.near_ties, check.max_rel_l2,
                  check.max_abs_logit_diff);
    else
      std::printf("check: no baseline (--baseline none): tokens not cross-checked\n");
    for (const CtxResult& r : results)
      if (!r.profile.empty()) std::printf("--- profile, ctx %lld ---\n%s", static_cast<long long>(r.ctx), r.profile.c_str());
    std::printf("%8s %14s %10s %16s %10s %9s\n", "ctx", "amk ms/token", "amk %bw", "baseline ms/tok", "base %bw",
                "speedup");
    for (const CtxResult& r : results) {
      if (r.base_ms > 0)
        std::printf("%8lld %14.3f %9.1f%% %16.3f %9.1f%% %8.2fx\n", static_cast<long long>(r.ctx), r.amk_ms,
                    pct(r.amk_ms), r.base_ms, pct(r.base_ms), r.base_ms / r.amk_ms);
      else
        std::printf("%8lld %14.3f %9.1f%% %16s %10s %9s\n", static_cast<long long>(r.ctx), r.amk_ms, pct(r.amk_ms), "-",
                    "-", "-");
    }
  }
  return kExitOk;
}

}  // namespace amk::bench
