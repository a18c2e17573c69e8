// vm/session.cpp: Session over a loader::ProgramImage and an Executor.
#include "vm/session.h"

#include <algorithm>

#include "instructions/common/dtype.h"
#include "ir/json.h"
#include "ir/params.h"
#include "loader/loader.h"
#include "vm/cpu_count.h"
#include "vm/cpu_vm.h"
#include "vm/gpu_backends.h"
#include "vm/trace_export.h"

namespace amk {
const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Hip: return "hip";
  }
  return "?";
}

std::optional<Backend> backend_from_name(const std::string& name) {
  for (Backend b : {Backend::Auto, Backend::Cpu, Backend::Cuda, Backend::Hip})
    if (name == backend_name(b)) return b;
  return std::nullopt;
}

bool backend_available(Backend b, std::string* why_not) {
  switch (b) {
    case Backend::Auto:
    case Backend::Cpu: return true;
    case Backend::Cuda: return vm::cuda_available(why_not);
    case Backend::Hip: return vm::hip_available(why_not);
  }
  return false;
}

struct Session::Impl {
  std::unique_ptr<loader::ProgramImage> image;
  std::unique_ptr<vm::Executor> executor;
  std::chrono::milliseconds watchdog{30000};
  int32_t pos = 0;
  int32_t vocab = 0;
  int32_t max_seq = 0;
  std::vector<double> latencies;
  std::vector<uint8_t> logits_raw;
  bool trace = false;
  std::vector<vm::LaunchTrace> traces;  // one per launch since open/reset when tracing
  bool bit_reproducible = true;         // no ACCUMULATE task
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::open(const std::string& program_path, const SessionOptions& options) {
  auto program = ir::program_load(program_path);
  if (!program) return Status(program.status().code(), program_path + ": " + program.status().message());
  return create(*program, options);
}

Result<std::unique_ptr<Session>> Session::create(const ir::Program& program, const SessionOptions& options) {
  Backend backend = options.backend;
  std::string why_not;
  if (backend == Backend::Auto) {  // the GPU this build can drive, if one is present; else the CPU VM
    backend = vm::cuda_available(nullptr) ? Backend::Cuda : vm::hip_available(nullptr) ? Backend::Hip : Backend::Cpu;
  }
  if (!backend_available(backend, &why_not))
    return Status(StatusCode::Unsupported, std::string("backend ") + backend_name(backend) + " is not available: " + why_not);

  loader::LoadOptions lo;
  lo.weights_path = options.weights_path;
  lo.random_weights_seed = options.random_weights_seed;
  lo.unsafe_skip_validation_for_tests = options.unsafe_skip_validation_for_tests;
  lo.on_weight_progress = options.on_weight_progress;
  if (backend == Backend::Cpu) {
    lo.workers = options.threads > 0 ? options.threads : vm::available_cpus();
  }
  auto image = loader::load_program(program, lo);
  if (!image) return image.status();

  auto impl = std::make_unique<Impl>();
  impl->image = std::move(*image);
  const loader::DecodeBindings& d = impl->image->decode();
  if (d.token_input < 0)
    return Status(StatusCode::InvalidArgument,
                  "the program has no decode section with a token_input buffer, so it cannot be stepped "
                  "(docs/OPCODES.md, \"The decode section\")");
  impl->vocab = d.vocab;
  impl->max_seq = d.max_seq;
  impl->watchdog = options.watchdog;
  impl->bit_reproducible = std::none_of(program.tasks.begin(), program.tasks.end(), [](const ir::Task& t) {
    return (t.params.int_or("flags", 0) & ir::kFlagAccumulate) != 0;
  });
  if (d.logits >= 0) {
    const amk_buffer_t& b = impl->image->view().buffers[d.logits];
    impl->logits_raw.resize(static_cast<size_t>(ir::dtype_nbytes(static_cast<ir::DType>(b.dtype), b.numel)));
  }
  if (backend == Backend::Cpu) {
    impl->executor = vm::make_cpu_executor(*impl->image);
  } else {
    auto ex = vm::make_gpu_executor(backend == Backend::Cuda ? "cuda" : "hip", *impl->image);
    if (!ex) return ex.status();
    impl->executor = std::move(*ex);
  }
  if (options.trace && !impl->executor->supports_trace())
    return Status(StatusCode::Unsupported,
                  "tracing is not supported by the " + impl->executor->name() + " backend yet; use --backend cpu");
  impl->trace = options.trace;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<StepResult> Session::step(int32_t token) {
  Impl& s = *impl_;
  if (s.vocab > 0 && (token < 0 || token >= s.vocab))
    return Status(StatusCode::InvalidArgument,
                  "token id " + std::to_string(token) + " is outside the vocabulary [0, " + std::to_string(s.vocab) + ")");
  if (s.max_seq > 0 && s.pos >= s.max_seq)
    return Status(StatusCode::InvalidArgument, "position " + std::to_string(s.pos) + " is past the KV cache (max_seq " +
                                                   std::to_string(s.max_seq) + "); reset() to start a new sequence");
  const loader::DecodeBindings& d = s.image->decode();
  Status st = s.executor->write_buffer(d.token_input, &token, sizeof token);
  if (!st) return st;
  vm::LaunchOptions lo;
  lo.deadline = s.watchdog;
  vm::LaunchStats stats;
  if (s.trace) {
    s.traces.emplace_back();
    lo.trace = &s.traces.back();
  }
  st = s.executor->launch(s.pos, lo, &stats);
  if (!st) return st;

  StepResult r;
  r.latency_us = stats.wall_us;
  s.latencies.push_back(stats.wall_us);
  if (d.logits >= 0) {
    st = s.executor->read_buffer(d.logits, s.logits_raw.data(), s.logits_raw.size());
    if (!st) return st;
    const amk_buffer_t& b = s.image->view().buffers[d.logits];
    r.logits.resize(static_cast<size_t>(b.numel));
    const ir::DType dt = static_cast<ir::DType>(b.dtype);
    if (dt != ir::DType::F32 && dt != ir::DType::BF16 && dt != ir::DType::F16)
      return Status(StatusCode::Unsupported, "logits buffer dtype must be F32, BF16 or F16");
    for (size_t i = 0; i < r.logits.size(); ++i)
      r.logits[i] = instructions::load_elem(s.logits_raw.data(), b.dtype, static_cast<int64_t>(i));
  }
  if (d.next_token >= 0) {
    st = s.executor->read_buffer(d.next_token, &r.token, sizeof r.token);
    if (!st) return st;
  }
  ++s.pos;
  return r;
}

Result<std::vector<int32_t>> Session::generate(const std::vector<int32_t>& prompt, int max_new_tokens,
                                               const StepProgress& on_step) {
  if (prompt.empty()) return Status(StatusCode::InvalidArgument, "generate needs at least one prompt token");
  if (max_new_tokens < 0)
    return Status(StatusCode::InvalidArgument, "max_new_tokens must be >= 0, got " + std::to_string(max_new_tokens));
  if (impl_->image->decode().next_token < 0)
    return Status(StatusCode::InvalidArgument, "the program samples no next_token, so it cannot generate");
  std::vector<int32_t> out;
  if (max_new_tokens == 0) return out;
  const int planned = static_cast<int>(prompt.size()) + max_new_tokens - 1;
  int done = 0;
  int32_t next = -1;
  for (int32_t t : prompt) {
    auto r = step(t);
    if (!r) return r.status();
    next = r->token;
    if (on_step) on_step(++done, planned);
  }
  out.push_back(next);
  while (static_cast<int>(out.size()) < max_new_tokens) {
    auto r = step(next);
    if (!r) return r.status();
    next = r->token;
    out.push_back(next);
    if (on_step) on_step(++done, planned);
  }
  return out;
}

Status Session::reset() {
  impl_->pos = 0;
  impl_->latencies.clear();
  impl_->traces.clear();
  return impl_->executor->reset_state();
}

int32_t Session::position() const { return impl_->pos; }
int32_t Session::max_positions() const { return impl_->max_seq; }
int32_t Session::vocab_size() const { return impl_->vocab; }
bool Session::bit_reproducible() const { return impl_->bit_reproducible; }
std::string Session::backend() const { return impl_->executor->name(); }
int Session::workers() const { return impl_->image->workers(); }
const std::vector<double>& Session::step_latencies_us() const { return impl_->latencies; }
bool Session::tracing() const { return impl_->trace; }

Status Session::write_trace(const std::string& path, const std::string& program_name) const {
  if (!impl_->trace)
    return Status(StatusCode::InvalidArgument, "this session records no trace: open it with SessionOptions::trace");
  vm::TraceInfo info;
  info.program = program_name;
  info.backend = impl_->executor->name();
  info.workers = impl_->image->workers();
  return vm::trace_save_chrome(path, impl_->image->program(), impl_->traces, info);
}

}  // namespace amk
