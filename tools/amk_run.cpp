// tools/amk_run.cpp: amk-run, decode a program with the Session API and report latency.
// Exit codes: 0 ok; 1 bad input (program, weights, prompt); 2 usage; 3 runtime failure
// (timeout, device error); 4 backend not available in this build or on this machine.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

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

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[idx];
}

int fail(bool json, const amk::Status& st, const std::string& program) {
  const int code = exit_code_for(st.code());
  if (json) {
    nlohmann::ordered_json j;
    j["tool"] = "amk-run";
    j["ok"] = false;
    j["program"] = program;
    j["error"] = {{"code", amk::status_code_name(st.code())}, {"message", st.message()}};
    j["exit_code"] = code;
    std::cout << j.dump(2) << "\n";
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
  app.add_option("program", program_path, "program JSON (amk IR 0.2)")->required();
  auto* weights_opt = app.add_option("--weights", weights, "safetensors file with the program's WEIGHT sources");
  auto* seed_opt = app.add_option("--random-weights", seed, "use seeded random weights instead of a file");
  weights_opt->excludes(seed_opt);
  app.add_option("--prompt-ids", prompt_text, "comma-separated prompt token ids")->capture_default_str();
  app.add_option("--max-tokens", max_tokens, "tokens to generate")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--backend", backend_text, "auto|cpu|cuda|hip")->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}))->capture_default_str();
  app.add_option("--threads", threads, "CPU workers (0 = hardware threads)")->check(CLI::NonNegativeNumber);
  app.add_option("--watchdog-ms", watchdog_ms, "per-token deadline before TIMEOUT")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--json", json, "print one JSON object (see README)");
  app.footer(
      "Exit codes: 0 ok; 1 bad input (program, weights, prompt ids); 2 usage; 3 runtime failure (timeout,\n"
      "device error); 4 backend not available.\n"
      "--json: {tool, ok, program, backend, workers, prompt, generated, steps,\n"
      "latency_us {median, p90, generation_median}, "
      "tokens_per_s} or {tool, ok: false, program, error {code, message}, exit_code}.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
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
  if (weights.empty() && !*seed_opt) {
    std::cerr << "amk-run: give --weights MODEL.safetensors or --random-weights SEED\n";
    return kExitUsage;
  }

  auto session = amk::Session::open(program_path, options);
  if (!session) return fail(json, session.status(), program_path);
  auto generated = (*session)->generate(prompt, max_tokens);
  if (!generated) return fail(json, generated.status(), program_path);

  const std::vector<double>& lat = (*session)->step_latencies_us();
  double total_us = 0.0;
  for (double v : lat) total_us += v;
  const double median = percentile(lat, 0.5), p90 = percentile(lat, 0.9);
  // Generation steps alone (after the prompt): the decode latency at the prompt's context length.
  const std::vector<double> gen(lat.begin() + static_cast<std::ptrdiff_t>(std::min(prompt.size(), lat.size())), lat.end());
  const double gen_median = percentile(gen, 0.5);
  const double tps = total_us > 0.0 ? static_cast<double>(lat.size()) * 1e6 / total_us : 0.0;

  if (json) {
    nlohmann::ordered_json j;
    j["tool"] = "amk-run";
    j["ok"] = true;
    j["program"] = program_path;
    j["backend"] = (*session)->backend();
    j["workers"] = (*session)->workers();
    j["prompt"] = prompt;
    j["generated"] = *generated;
    j["steps"] = lat.size();
    j["latency_us"] = {{"median", median}, {"p90", p90}, {"generation_median", gen_median}};
    j["tokens_per_s"] = tps;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("amk-run: %s on %s (%d workers)\n", program_path.c_str(), (*session)->backend().c_str(),
              (*session)->workers());
  std::printf("prompt:     ");
  for (int32_t t : prompt) std::printf("%d ", t);
  std::printf("\ngenerated:  ");
  for (int32_t t : *generated) std::printf("%d ", t);
  std::printf("\nlatency:    median %.3f ms/token, p90 %.3f ms/token over %zu steps\n", median / 1e3, p90 / 1e3,
              lat.size());
  std::printf("generation: median %.3f ms/token over the %zu steps after the prompt\n", gen_median / 1e3, gen.size());
  std::printf("throughput: %.1f tokens/s\n", tps);
  return kExitOk;
}
