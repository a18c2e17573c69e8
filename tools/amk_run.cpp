// tools/amk_run.cpp: amk-run, decode a program with the Session API and report latency.
// Exit codes: 0 ok; 1 bad input (program, weights, prompt); 2 usage; 3 runtime failure
// (timeout, device error); 4 backend not available in this build or on this machine (or it cannot
// trace yet). --trace writes a Chrome trace (docs/TRACING.md); --json follows docs/JSON.md.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/common/json_out.h"
#include "tools/common/progress.h"
#include "vm/session.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitBackend = 4;

int exit_code_for(amk::StatusCode code) {
  switch (code) {
    case amk::StatusCode::Ok: return kExitOk;
    case amk::StatusCode::Unsupported: return kExitBackend;
    case amk::StatusCode::Timeout:
    case amk::StatusCode::GpuRuntime:
    case amk::StatusCode::DeviceError:
    case amk::StatusCode::Internal: return kExitRuntime;
    default: return kExitBadInput;
  }
}

/// "1,2,3" -> ids; false on anything that is not a comma-separated list of integers.
bool parse_ids(const std::string& text, std::vector<int32_t>* ids, std::string* error) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < INT32_MIN || v > INT32_MAX) throw std::invalid_argument(item);
      ids->push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      *error = "--prompt-ids: '" + item + "' is not an integer token id";
      return false;
    }
  }
  if (ids->empty()) {
    *error = "--prompt-ids: expected a comma-separated list such as 1,2,3";
    return false;
  }
  return true;
}

using amk::tools::percentile;

int fail(bool json, const amk::Status& st, const std::string& program) {
  const int code = exit_code_for(st.code());
  if (json) {
    amk::tools::Json j = amk::tools::json_document("amk-run");
    j["program"] = program;
    amk::tools::json_fail(j, st, code);
    std::cout << amk::tools::json_text(j);
  } else {
    std::cerr << "amk-run: " << program << ": " << st.message() << "\n";
    if (st.code() == amk::StatusCode::Unsupported) std::cerr << "hint: use --backend cpu\n";
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"amk-run: decode tokens with a megakernel program on the CPU VM or a GPU"};
  std::string program_path, weights, backend_text = "auto", prompt_text = "1";
  uint64_t seed = 0;
  int max_tokens = 16, threads = 0, watchdog_ms = 30000;
  bool json = false;
  std::string trace_path;
  app.add_option("program", program_path, "program JSON (amk IR 0.2)")->required();
  auto* weights_opt = app.add_option("--weights", weights, "safetensors file with the program's WEIGHT sources");
  auto* seed_opt = app.add_option("--random-weights", seed, "use seeded random weights instead of a file");
  weights_opt->excludes(seed_opt);
  app.add_option("--prompt-ids", prompt_text, "comma-separated prompt token ids")->capture_default_str();
  // Ranges in int, not CLI::NonNegativeNumber, whose message prints DBL_MAX in full (docs/ERRORS.md).
  constexpr int kIntMax = std::numeric_limits<int>::max();
  app.add_option("--max-tokens", max_tokens, "tokens to generate")->check(CLI::Range(0, kIntMax))->capture_default_str();
  app.add_option("--backend", backend_text, "auto|cpu|cuda|hip")->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}))->capture_default_str();
  app.add_option("--threads", threads, "CPU workers (0 = the CPUs this process may use: affinity mask, cgroup quota)")->check(CLI::Range(0, kIntMax));
  app.add_option("--watchdog-ms", watchdog_ms, "per-token deadline before TIMEOUT")->check(CLI::Range(1, kIntMax))->capture_default_str();
  app.add_flag("--json", json, "print one JSON object (docs/JSON.md)");
  app.add_option("--trace", trace_path, "write a Chrome/Perfetto trace of every launch (docs/TRACING.md)")
      ->type_name("OUT.json");
  app.footer(
      "Exit codes: 0 ok; 1 bad input (program, weights, prompt ids); 2 usage; 3 runtime failure (timeout,\n"
      "device error); 4 backend not available.\n"
      "--json (docs/JSON.md): {tool, version, ok, exit_code, error, program, backend, workers,\n"
      "tokens {prompt, generated}, steps, latency_us {median, p90, min, max, mean, count,\n"
      "generation_median}, tokens_per_s, trace}; on failure ok false and error {code, message}.\n"
      "A progress bar is drawn on stderr only when stderr is a terminal.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // like the other tools: name the tool, then the problem
    std::fprintf(stderr, "amk-run: %s\nRun 'amk-run --help' for usage.\n", e.what());
    return kExitUsage;
  }

  std::vector<int32_t> prompt;
  std::string error;
  if (!parse_ids(prompt_text, &prompt, &error)) {
    std::cerr << "amk-run: " << error << "\n";
    return kExitUsage;
  }
  amk::SessionOptions options;
  options.weights_path = weights;
  if (*seed_opt) options.random_weights_seed = seed;
  options.backend = *amk::backend_from_name(backend_text);
  options.threads = threads;
  options.watchdog = std::chrono::milliseconds(watchdog_ms);
  options.trace = !trace_path.empty();
  amk::tools::ProgressBar load_bar("loading weights", amk::tools::ProgressUnit::Bytes);
  options.on_weight_progress = [&load_bar](int64_t done, int64_t total) { load_bar.update(done, total); };
  if (weights.empty() && !*seed_opt) {
    std::cerr << "amk-run: give --weights MODEL.safetensors or --random-weights SEED\n";
    return kExitUsage;
  }

  auto session = amk::Session::open(program_path, options);
  load_bar.finish();
  if (!session) return fail(json, session.status(), program_path);
  amk::tools::ProgressBar gen_bar("decoding", amk::tools::ProgressUnit::Count);
  auto generated = (*session)->generate(prompt, max_tokens, [&gen_bar](int done, int total) { gen_bar.update(done, total); });
  gen_bar.finish();
  if (!generated) return fail(json, generated.status(), program_path);
  if (!trace_path.empty()) {
    if (amk::Status st = (*session)->write_trace(trace_path, program_path); !st) return fail(json, st, program_path);
  }

  const std::vector<double>& lat = (*session)->step_latencies_us();
  double total_us = 0.0;
  for (double v : lat) total_us += v;
  const double median = percentile(lat, 0.5), p90 = percentile(lat, 0.9);
  // Generation steps alone (after the prompt): the decode latency at the prompt's context length.
  const std::vector<double> gen(lat.begin() + static_cast<std::ptrdiff_t>(std::min(prompt.size(), lat.size())), lat.end());
  const double gen_median = percentile(gen, 0.5);
  const double tps = total_us > 0.0 ? static_cast<double>(lat.size()) * 1e6 / total_us : 0.0;

  if (json) {
    amk::tools::Json j = amk::tools::json_document("amk-run");
    amk::tools::json_succeed(j);
    j["program"] = program_path;
    j["backend"] = (*session)->backend();
    j["workers"] = (*session)->workers();
    j["tokens"] = {{"prompt", prompt}, {"generated", *generated}};
    j["steps"] = lat.size();
    j["latency_us"] = amk::tools::json_latency_us(lat);
    j["latency_us"]["generation_median"] = gen_median;
    j["tokens_per_s"] = tps;
    j["bit_reproducible"] = (*session)->bit_reproducible();
    j["trace"] = trace_path.empty() ? amk::tools::Json(nullptr) : amk::tools::Json(trace_path);
    std::cout << amk::tools::json_text(j);
    return kExitOk;
  }
  const int workers = (*session)->workers();
  std::printf("amk-run: %s on %s (%d worker%s)\n", program_path.c_str(), (*session)->backend().c_str(), workers,
              workers == 1 ? "" : "s");
  std::printf("prompt:     ");
  for (int32_t t : prompt) std::printf("%d ", t);
  std::printf("\ngenerated:  ");
  for (int32_t t : *generated) std::printf("%d ", t);
  std::printf("\nlatency:    median %.3f ms/token, p90 %.3f ms/token over %zu steps\n", median / 1e3, p90 / 1e3,
              lat.size());
  std::printf("generation: median %.3f ms/token over the %zu steps after the prompt\n", gen_median / 1e3, gen.size());
  std::printf("throughput: %.1f tokens/s\n", tps);
  if (!trace_path.empty()) std::printf("trace:      %s (open in ui.perfetto.dev)\n", trace_path.c_str());
  if (!(*session)->bit_reproducible())
    std::printf("note:       this program adds into F32 buffers with atomic adds (ACCUMULATE, e.g. the MLP fold): "
                "its logits vary in the last bits from run to run\n");
  return kExitOk;
}
