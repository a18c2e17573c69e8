// tools/bench/decode_bench.cpp: see decode_bench.h. CUDA builds only (decode_bench_nogpu.cpp
// otherwise). amk runs through the same loader and GPU executor a Session uses; the baseline gets
// the executor's device copies of the very same weight buffers, so both decode the same model.
#include "tools/bench/decode_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/validate.h"
#include "loader/loader.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "tools/bench/baseline_adapter.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/copy_bandwidth.h"
#include "tools/bench/trace_summary.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/trace_export.h"

namespace amk::bench {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 1, kExitGpu = 3, kExitMismatch = 4;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// "h200" / "h100" from the device name when --target auto.
Result<ir::GpuTarget> resolve_target(const std::string& want, const std::string& device) {
  if (want != "auto") return targets::target_resolve(want);
  if (device.find("H200") != std::string::npos) return targets::target_find("h200");
  if (device.find("H100") != std::string::npos) return targets::target_find("h100");
  if (device.find("B200") != std::string::npos) return targets::target_find("b200");
  if (device.find("A100") != std::string::npos) return targets::target_find("a100");
  return Status(StatusCode::InvalidArgument, "--target auto: no built-in target matches device '" + device +
                                                 "'; pass --target NAME or a target JSON file");
}

/// One program, loaded and on the device.
struct AmkModel {
  ir::Program program;
  std::unique_ptr<loader::ProgramImage> image;
  std::unique_ptr<vm::Executor> exec;
  int64_t weight_bytes = 0;
  std::string preset_json;  ///< the built-in schedule it was lowered with (empty: --schedule's file)
  int64_t max_seq = 0;      ///< KV cache rows

  Status step(int32_t token, int32_t pos, int32_t* next, double* device_us, vm::LaunchTrace* trace = nullptr) {
    const loader::DecodeBindings& d = image->decode();
    Status s = exec->write_buffer(d.token_input, &token, sizeof token);
    if (!s) return s;
    vm::LaunchOptions lo;
    lo.trace = trace;
    vm::LaunchStats st;
    s = exec->launch(pos, lo, &st);
    if (!s) return s;
    if (device_us != nullptr) *device_us = st.device_us;
    return next != nullptr ? exec->read_buffer(d.next_token, next, sizeof *next) : Status::ok();
  }
};

/// One line on the built-in schedule a run measured (its full knobs are in the --json document).
std::string preset_summary(const schedule::DecodePreset& p, const schedule::ModelConfig& model, int64_t max_seq) {
  std::ostringstream out;
  out << "built-in gpu-decode preset (" << p.sm_assignment << ", ";
  if (p.tiles_per_stage > 0) out << p.tiles_per_stage << " tile(s) per SM per stage";
  else if (p.tile_kib > 0) out << p.tile_kib << " KiB tiles";
  else out << p.tiles_per_sm << " tile(s) per SM per projection";
  out << ", " << schedule::decode_preset_kv_partitions(p, max_seq) << " KV partition(s), "
      << schedule::decode_preset_heads_per_task(p, model) << " head(s) per attention task";
  for (const std::string& g : p.drop_fusion) out << ", without " << g;
  out << ")";
  return out.str();
}

Status build_amk(const DecodeBenchOptions& o, const schedule::ModelConfig& model, const ir::GpuTarget& target,
                 int64_t max_seq, AmkModel* out) {
  out->max_seq = max_seq;
  if (o.schedule.empty()) out->preset_json = schedule::decode_preset_json(model, target.num_sms, max_seq, o.tiling);
  Result<ir::ScheduleConfig> cfg = o.schedule.empty()
                                       ? schedule::schedule_config_from_json_text(out->preset_json, "built-in decode schedule")
                                       : schedule::schedule_config_load(o.schedule);
  if (!cfg) return cfg.status();
  schedule::LowerOptions lo;
  lo.max_seq = max_seq;
  lo.dtype = ir::DType::BF16;
  Result<ir::Program> prog = schedule::lower(model, *cfg, target, lo);
  if (!prog) return prog.status();
  out->program = std::move(*prog);
  for (const ir::Buffer& b : out->program.buffers)
    if (b.kind == ir::BufferKind::Weight) out->weight_bytes += b.nbytes();
  loader::LoadOptions load;
  load.random_weights_seed = o.seed;
  Result<std::unique_ptr<loader::ProgramImage>> img = loader::load_program(out->program, load);
  if (!img) return img.status();
  out->image = std::move(*img);
  if (out->image->decode().token_input < 0 || out->image->decode().next_token < 0)
    return Status(StatusCode::InvalidArgument, "the lowered program has no decode token input / next_token");
  Result<std::unique_ptr<vm::Executor>> ex = vm::make_cuda_executor(*out->image);
  if (!ex) return ex.status();
  out->exec = std::move(*ex);
  return Status::ok();
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
  Result<ir::GpuTarget> target = resolve_target(o.target, device);
  if (!target) return fail(kExitBadInput, target.status().message());
  const int64_t max_ctx = *std::max_element(o.ctx.begin(), o.ctx.end());
  if (*std::min_element(o.ctx.begin(), o.ctx.end()) < 1) return fail(kExitBadInput, "--ctx lengths must be >= 1");
  const int64_t max_seq = (std::max<int64_t>(max_ctx, o.check_steps) + 255) / 256 * 256;

  AmkModel amk;
  Status s = build_amk(o, *model, *target, max_seq, &amk);
  if (!s) return fail(s.code() == StatusCode::GpuRuntime || s.code() == StatusCode::Unsupported ? kExitGpu : kExitBadInput,
                      s.message());
  const vm::GpuKernelReport* rep = vm::gpu_kernel_report(*amk.exec);

  Result<CopyBandwidth> bw = measure_copy_bandwidth();
  if (!bw) return fail(kExitGpu, bw.status().message());

  std::unique_ptr<DecodeBaseline> base;
  if (o.baseline != "none") {
    Result<std::unique_ptr<DecodeBaseline>> b = make_baseline(o.baseline, *model, amk.program, *amk.exec, max_seq);
    if (!b) return fail(b.status().code() == StatusCode::InvalidArgument ? kExitBadInput : kExitGpu, b.status().message());
    base = std::move(*b);
  }

  // Correctness first: greedy from an empty cache, both fed amk's tokens. A logits error above
  // kMaxRelL2 means one decoder is wrong, whatever the tokens say.
  constexpr double kMaxRelL2 = 0.1;
  int32_t token = 1, agree = 0, near_ties = 0;
  double worst_rel_l2 = 0.0, worst_abs = 0.0;
  const loader::DecodeBindings& bind = amk.image->decode();
  std::vector<float> amk_logits(static_cast<size_t>(std::max(bind.vocab, 0)));
  for (int32_t pos = 0; pos < o.check_steps; ++pos) {
    int32_t mine = -1;
    s = amk.step(token, pos, &mine, nullptr);
    if (!s) return fail(kExitGpu, "amk step " + std::to_string(pos) + ": " + s.message());
    if (base) {
      if (bind.logits < 0) return fail(kExitBadInput, "the program has no logits buffer to compare");
      s = amk.exec->read_buffer(bind.logits, amk_logits.data(), amk_logits.size() * sizeof(float));
      if (!s) return fail(kExitGpu, "amk logits: " + s.message());
      DecodeBaseline::Comparison c;
      s = base->step(token, pos, mine, amk_logits, &c);
      if (!s) return fail(kExitGpu, "baseline step " + std::to_string(pos) + ": " + s.message());
      worst_rel_l2 = std::max(worst_rel_l2, c.rel_l2);
      worst_abs = std::max(worst_abs, c.max_abs_diff);
      if (c.rel_l2 > kMaxRelL2 || !(c.agree || c.within_noise))
        return fail(kExitMismatch, "correctness check failed at step " + std::to_string(pos) + ": amk's next token " +
                                       std::to_string(mine) + ", baseline's " + std::to_string(c.next) +
                                       ", logits relative L2 error " + std::to_string(c.rel_l2) + ", max |diff| " +
                                       std::to_string(c.max_abs_diff) + "; no latency is reported");
      if (c.agree) ++agree;
      else ++near_ties;
    }
    token = mine;
  }

  std::vector<CtxResult> results;
  std::vector<vm::LaunchTrace> traces;
  for (int64_t ctx : o.ctx) {
    CtxResult r;
    r.ctx = ctx;
    const auto pos = static_cast<int32_t>(ctx - 1);  // attends rows [0, ctx)
    std::vector<double> us;
    for (int i = 0; i < o.warmup + o.tokens; ++i) {
      double d = 0.0;
      s = amk.step(token, pos, nullptr, &d);
      if (!s) return fail(kExitGpu, "amk timed step at ctx " + std::to_string(ctx) + ": " + s.message());
      if (i >= o.warmup) us.push_back(d);
    }
    r.amk_ms = median(us) / 1000.0;
    if (o.profile || !o.trace_out.empty()) {
      vm::LaunchTrace tr;
      s = amk.step(token, pos, nullptr, nullptr, &tr);
      if (!s) return fail(kExitGpu, "amk traced step: " + s.message());
      r.profile = summarize_trace(amk.program, tr);
      traces.push_back(std::move(tr));
    }
    if (base) {
      std::vector<double> ms;
      s = base->time_steps(token, pos, o.warmup, o.tokens, &ms);
      if (!s) return fail(kExitGpu, "baseline timed steps at ctx " + std::to_string(ctx) + ": " + s.message());
      r.base_ms = median(ms);
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
    tools::Json j = bench_document("decode");
    tools::json_succeed(j);
    j["device"] = device;
    j["model"] = o.model;
    j["target"] = target->name;
    // What was measured: the built-in schedule's knobs in full, or the schedule file's path.
    j["schedule"] = amk.preset_json.empty() ? nlohmann::ordered_json(o.schedule)
                                            : nlohmann::ordered_json::parse(amk.preset_json);
    j["weight_bytes"] = amk.weight_bytes;
    j["copy_bandwidth_gbs"] = bw->gbs;
    j["check"] = {{"steps", o.check_steps}, {"agree", agree},           {"near_ties", near_ties},
                  {"baseline", o.baseline}, {"max_rel_l2", worst_rel_l2}, {"max_abs_logit_diff", worst_abs}};
    if (rep != nullptr) j["kernel"] = rep->summary();
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
    std::printf("schedule: %s\n", amk.preset_json.empty() ? o.schedule.c_str() : preset_summary(o.tiling, *model, amk.max_seq).c_str());
    std::printf("copy bandwidth: %.0f GB/s (D2D %zu MiB, read + write)\n", bw->gbs, bw->bytes >> 20);
    if (base)
      std::printf("check: %d/%d steps same next token as %s, %d more within the logits' difference; logits "
                  "relative L2 error <= %.4f, max |diff| %.4f\n",
                  agree, o.check_steps, o.baseline.c_str(), near_ties, worst_rel_l2, worst_abs);
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
