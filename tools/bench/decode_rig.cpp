// tools/bench/decode_rig.cpp: see decode_rig.h. amk runs through the same loader and GPU executor a
// Session uses; the baseline gets the executor's device copies of the very same weight buffers, so
// both decode the same model.
#include "tools/bench/decode_rig.h"

#include <algorithm>

#include "schedule/lower.h"
#include "targets/registry.h"
#include "tools/bench/timing_emulation.h"
#include "tools/common/json_out.h"
#include "vm/cuda/cuda_executor.h"

namespace amk::bench {

int bench_exit_code(StatusCode code) {
  switch (code) {
    case StatusCode::GpuRuntime:
    case StatusCode::Unsupported:
    case StatusCode::DeviceError:
    case StatusCode::Timeout: return 3;
    default: return 1;
  }
}

Result<ir::GpuTarget> resolve_bench_target(const std::string& want, const std::string& device) {
  if (want != "auto") return targets::target_resolve(want);
  if (device.find("H200") != std::string::npos) return targets::target_find("h200");
  if (device.find("H100") != std::string::npos) return targets::target_find("h100");
  if (device.find("B200") != std::string::npos) return targets::target_find("b200");
  if (device.find("A100") != std::string::npos) return targets::target_find("a100");
  return Status(StatusCode::InvalidArgument, "--target auto: no built-in target matches device '" + device +
                                                 "'; pass --target NAME or a target JSON file");
}

Status DecodeRig::step(int32_t token, int32_t pos, int32_t* next, double* device_us, vm::LaunchTrace* trace) {
  const loader::DecodeBindings& d = image->decode();
  Status s = exec->write_buffer(d.token_input, &token, sizeof token);
  if (!s) return s;
  vm::LaunchOptions lo;
  lo.trace = trace;
  lo.deadline = watchdog;
  vm::LaunchStats st;
  s = exec->launch(pos, lo, &st);
  if (!s) return s;
  if (device_us != nullptr) *device_us = st.device_us;
  return next != nullptr ? exec->read_buffer(d.next_token, next, sizeof *next) : Status::ok();
}

Result<std::unique_ptr<DecodeRig>> build_decode_rig(const schedule::ModelConfig& model, const ir::GpuTarget& target,
                                                   const ir::ScheduleConfig& schedule, int64_t max_seq, uint64_t seed,
                                                   const std::string& baseline) {
  auto rig = std::make_unique<DecodeRig>();
  rig->max_seq = max_seq;
  schedule::LowerOptions lo;
  lo.max_seq = max_seq;
  lo.dtype = ir::DType::BF16;
  Result<ir::Program> prog = schedule::lower(model, schedule, target, lo);
  if (!prog) return prog.status();
  rig->program = std::move(*prog);
  Status emu = apply_env_timing_emulation(rig->program, &rig->emulation);
  if (!emu) return emu;
  if (!rig->emulation.empty() && baseline != "none")
    return Status(StatusCode::InvalidArgument, rig->emulation + ": its tokens are wrong on purpose; use --baseline none");
  for (const ir::Buffer& b : rig->program.buffers)
    if (b.kind == ir::BufferKind::Weight) rig->weight_bytes += b.nbytes();
  loader::LoadOptions load;
  load.random_weights_seed = seed;
  Result<std::unique_ptr<loader::ProgramImage>> img = loader::load_program(rig->program, load);
  if (!img) return img.status();
  rig->image = std::move(*img);
  if (rig->image->decode().token_input < 0 || rig->image->decode().next_token < 0)
    return Status(StatusCode::InvalidArgument, "the lowered program has no decode token input / next_token");
  Result<std::unique_ptr<vm::Executor>> ex = vm::make_cuda_executor(*rig->image);
  if (!ex) return ex.status();
  rig->exec = std::move(*ex);
  if (baseline != "none") {
    Result<std::unique_ptr<DecodeBaseline>> b = make_baseline(baseline, model, rig->program, *rig->exec, max_seq);
    if (!b) return b.status();
    rig->base = std::move(*b);
  }
  return rig;
}

Status check_decode_rig(DecodeRig& rig, int steps, DecodeCheck* out) {
  // A logits error above kMaxRelL2 means one decoder is wrong, whatever the tokens say.
  constexpr double kMaxRelL2 = 0.1;
  *out = DecodeCheck{};
  out->steps = steps;
  int32_t token = 1;
  const loader::DecodeBindings& bind = rig.image->decode();
  std::vector<float> amk_logits(static_cast<size_t>(std::max(bind.vocab, 0)));
  for (int32_t pos = 0; pos < steps; ++pos) {
    int32_t mine = -1;
    Status s = rig.step(token, pos, &mine, nullptr);
    if (!s) return Status(s.code(), "amk step " + std::to_string(pos) + ": " + s.message());
    if (rig.base) {
      if (bind.logits < 0) return Status(StatusCode::InvalidArgument, "the program has no logits buffer to compare");
      s = rig.exec->read_buffer(bind.logits, amk_logits.data(), amk_logits.size() * sizeof(float));
      if (!s) return Status(s.code(), "amk logits: " + s.message());
      DecodeBaseline::Comparison c;
      s = rig.base->step(token, pos, mine, amk_logits, &c);
      if (!s) return Status(s.code(), "baseline step " + std::to_string(pos) + ": " + s.message());
      out->max_rel_l2 = std::max(out->max_rel_l2, c.rel_l2);
      out->max_abs_logit_diff = std::max(out->max_abs_logit_diff, c.max_abs_diff);
      if (c.rel_l2 > kMaxRelL2 || !(c.agree || c.within_noise)) {
        out->mismatch = "correctness check failed at step " + std::to_string(pos) + ": amk's next token " +
                        std::to_string(mine) + ", baseline's " + std::to_string(c.next) + ", logits relative L2 error " +
                        std::to_string(c.rel_l2) + ", max |diff| " + std::to_string(c.max_abs_diff);
        return Status::ok();
      }
      if (c.agree) ++out->agree;
      else ++out->near_ties;
    }
    token = mine;
  }
  out->last_token = token;
  return Status::ok();
}

Status time_decode_rig(DecodeRig& rig, int32_t token, int64_t ctx, int warmup, int tokens, double* amk_ms) {
  const auto pos = static_cast<int32_t>(ctx - 1);  // attends rows [0, ctx)
  std::vector<double> us;
  for (int i = 0; i < warmup + tokens; ++i) {
    double d = 0.0;
    Status s = rig.step(token, pos, nullptr, &d);
    if (!s) return Status(s.code(), "amk timed step at ctx " + std::to_string(ctx) + ": " + s.message());
    if (i >= warmup) us.push_back(d);
  }
  *amk_ms = tools::median(us) / 1000.0;
  return Status::ok();
}

Status time_baseline_rig(DecodeRig& rig, int32_t token, int64_t ctx, int warmup, int tokens, double* base_ms) {
  if (!rig.base) return Status(StatusCode::Internal, "time_baseline_rig: the rig has no baseline");
  std::vector<double> ms;
  Status s = rig.base->time_steps(token, static_cast<int32_t>(ctx - 1), warmup, tokens, &ms);
  if (!s) return Status(s.code(), "baseline timed steps at ctx " + std::to_string(ctx) + ": " + s.message());
  *base_ms = tools::median(ms);
  return Status::ok();
}

}  // namespace amk::bench
