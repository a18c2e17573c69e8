// vm/session.h: the public host decode API. A Session owns a loaded program, its weights and KV
// caches on one backend; step() runs one launch (one token) and advances the position without
// re-validating, re-loading or re-uploading anything: position-dependent params follow the step
// block (docs/OPCODES.md, "Decode steps").
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"

namespace amk {

/// Which VM runs the program. Auto = CUDA when built with it and an NVIDIA GPU is present, else
/// HIP when built with it and an AMD GPU is present, else the CPU VM.
enum class Backend { Auto, Cpu, Cuda, Hip };
/// "auto", "cpu", "cuda", "hip".
const char* backend_name(Backend b);
/// Parse a backend name; nullopt when unknown.
std::optional<Backend> backend_from_name(const std::string& name);
/// Whether this build can run `b` on this machine right now (Auto: always true).
bool backend_available(Backend b, std::string* why_not = nullptr);

struct SessionOptions {
  std::string weights_path;                      ///< safetensors file (or empty with a seed)
  std::optional<uint64_t> random_weights_seed;   ///< seeded random weights instead of a file
  Backend backend = Backend::Auto;
  int threads = 0;                               ///< CPU workers; 0 = the CPUs this process may use (available_cpus)
  std::chrono::milliseconds watchdog{30000};     ///< per-launch deadline
  bool unsafe_skip_validation_for_tests = false; ///< TEST ONLY (watchdog tests)
  /// Record per-task timings of every launch (write them with write_trace()). Unsupported when
  /// the backend cannot trace yet.
  bool trace = false;
  /// Weight binding progress (bytes bound so far, total bytes); may be empty.
  std::function<void(int64_t done_bytes, int64_t total_bytes)> on_weight_progress;
};

/// Called by generate() after each launch with (launches done, launches planned).
using StepProgress = std::function<void(int done, int total)>;

/// What one step produced.
struct StepResult {
  std::vector<float> logits;  ///< empty when the program has no logits buffer
  int32_t token = -1;         ///< the sampled next token (-1 when the program samples none)
  double latency_us = 0.0;    ///< wall time of the launch
};

class Session {
 public:
  /// Load and validate a program file and its weights.
  static Result<std::unique_ptr<Session>> open(const std::string& program_path, const SessionOptions& options);
  /// Same, from an in-memory program.
  static Result<std::unique_ptr<Session>> create(const ir::Program& program, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Feed `token` at the current position; returns logits and the next token, then advances.
  Result<StepResult> step(int32_t token);
  /// Greedy: feed `prompt`, then generate `max_new_tokens` ids (each fed back). Continues from the
  /// current position; call reset() first for a fresh sequence.
  Result<std::vector<int32_t>> generate(const std::vector<int32_t>& prompt, int max_new_tokens,
                                        const StepProgress& on_step = nullptr);
  /// Forget the sequence: position 0, KV caches and activations zeroed.
  Status reset();

  int32_t position() const;
  int32_t max_positions() const;
  int32_t vocab_size() const;
  /// The backend actually running ("cpu", "cuda").
  std::string backend() const;
  /// Worker threads / SMs the program runs on.
  int workers() const;
  /// False when a task adds into its output with atomic adds (flags ACCUMULATE, docs/FOLD.md): the
  /// sums then follow the tasks' arrival, so logits vary in the last bits from run to run.
  bool bit_reproducible() const;
  /// Latency of every launch since open or reset, in microseconds.
  const std::vector<double>& step_latencies_us() const;
  /// Whether this session records traces (SessionOptions::trace).
  bool tracing() const;
  /// Write the traces of every launch since open or reset as a Chrome trace (docs/TRACING.md),
  /// atomically. InvalidArgument when the session was opened without tracing.
  [[nodiscard]] Status write_trace(const std::string& path, const std::string& program_name) const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace amk
