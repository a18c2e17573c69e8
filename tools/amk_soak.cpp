// tools/amk_soak.cpp: amk-soak, a long decode on one Session that samples the process's resident
// memory (VmRSS) and, on a GPU backend, the device memory in use, and says whether they stay flat
// (docs/RELIABILITY.md). The program's KV cache holds max_seq positions, so the decode runs as
// back-to-back sequences: at max_seq the session is reset() (position 0, caches zeroed) and the
// next sequence starts again from the prompt token, all in the same Session, so every launch, reset
// and buffer reuse of a long-running server is exercised.
// Device memory in use is total - free from the runtime's query (cudaMemGetInfo / hipMemGetInfo) on
// the session's device: it counts every process on that device, so run the soak on an idle GPU.
// Exit codes: 0 flat; 1 bad input, a failed step or a failed device-memory query; 2 usage;
// 4 backend not available in this build or on this machine (as amk-run); 5 resident or device
// memory grew past its limit.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vm/gpu_backends.h"
#include "vm/session.h"

namespace {

constexpr int kExitFlat = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitBackend = 4;  // tools/amk_run.cpp: the backend asked for is not available
constexpr int kExitGrowing = 5;

constexpr double kMiB = 1024.0 * 1024.0;

/// VmRSS of this process in KiB, from /proc/self/status (-1 when unavailable).
long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      long kib = -1;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 16, '\n');
  }
  return -1;
}

/// The largest later sample minus the first (samples has at least two entries).
template <typename T>
T max_growth(const std::vector<T>& samples) {
  return *std::max_element(samples.begin() + 1, samples.end()) - samples.front();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"amk-soak: decode many tokens on one session (resetting at max_seq) and sample VmRSS "
               "and, on a GPU, the device memory in use"};
  std::string program, weights, backend_text = "cpu";
  int tokens = 10000, every = 1000, threads = 0, first_token = 1, max_device_growth_mib = 0;
  long limit_kib = 1024;
  // Ranges in int, not CLI::PositiveNumber, whose message prints DBL_MAX in full (docs/ERRORS.md).
  constexpr int kIntMax = std::numeric_limits<int>::max();
  app.add_option("program", program, "program JSON")->required();
  app.add_option("--weights", weights, "safetensors weights")->required();
  app.add_option("--backend", backend_text, "auto|cpu|cuda|hip")->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}))
      ->capture_default_str();
  app.add_option("--tokens", tokens, "tokens (launches) to decode")->check(CLI::Range(1, kIntMax))
      ->capture_default_str();
  app.add_option("--sample-every", every, "tokens between memory samples")->check(CLI::Range(1, kIntMax))
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU workers (0 = the CPUs this process may use: affinity mask, cgroup quota)")->check(CLI::Range(0, kIntMax));
  app.add_option("--first-token", first_token, "token each sequence starts from")->capture_default_str();
  app.add_option("--limit-kib", limit_kib, "allowed VmRSS growth after the first sample, KiB")
      ->check(CLI::Range(0L, std::numeric_limits<long>::max()))->capture_default_str();
  app.add_option("--max-device-growth-mib", max_device_growth_mib,
                 "allowed growth of the device memory in use after the first sample, MiB (GPU backends)")
      ->check(CLI::Range(0, kIntMax))->capture_default_str();
  app.footer(
      "Exit codes: 0 flat; 1 bad input (program, weights, token), a failed step or a failed device-memory\n"
      "query; 2 usage; 4 backend not available; 5 VmRSS or device memory grew past its limit.\n"
      "Device memory in use is total - free from cudaMemGetInfo / hipMemGetInfo: every process on the\n"
      "device counts, so soak on an idle GPU.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // like amk-run: name the tool, then the problem
    std::fprintf(stderr, "amk-soak: %s\nRun 'amk-soak --help' for usage.\n", e.what());
    return kExitUsage;
  }
  if (tokens / every < 2) {
    std::cerr << "amk-soak: need two samples: --tokens " << tokens << " with --sample-every " << every
              << " gives " << tokens / every << " (use more --tokens or a smaller --sample-every)\n";
    return kExitUsage;
  }

  // Resolve auto here, as Session::create does (CUDA, else HIP, else the CPU VM), so the device
  // query below names the backend that runs: the GPU executor calls itself "cuda" in a HIP build
  // too, so Session::backend() cannot tell the two apart.
  amk::Backend chosen = *amk::backend_from_name(backend_text);
  if (chosen == amk::Backend::Auto) {
    chosen = amk::backend_available(amk::Backend::Cuda)  ? amk::Backend::Cuda
             : amk::backend_available(amk::Backend::Hip) ? amk::Backend::Hip
                                                         : amk::Backend::Cpu;
  }
  const std::string backend = amk::backend_name(chosen);
  amk::SessionOptions options;
  options.weights_path = weights;
  options.backend = chosen;
  options.threads = threads;
  auto session = amk::Session::open(program, options);
  if (!session.is_ok()) {
    std::cerr << "amk-soak: " << program << ": " << session.status().message() << "\n";
    if (session.status().code() == amk::StatusCode::Unsupported) {
      std::cerr << "hint: use --backend cpu\n";
      return kExitBackend;
    }
    return kExitFailed;
  }
  amk::Session& s = **session;
  const bool gpu = chosen != amk::Backend::Cpu;
  const char* query = backend == "hip" ? "hipMemGetInfo" : "cudaMemGetInfo";
  uint64_t device_total = 0;
  auto device_used = [&](uint64_t* used) -> bool {
    auto info = amk::vm::gpu_memory_info(backend);
    if (!info.is_ok()) {
      std::cerr << "amk-soak: " << query << ": " << info.status().message() << "\n";
      return false;
    }
    device_total = info->total_bytes;
    *used = info->used_bytes();
    return true;
  };
  if (gpu) {
    uint64_t used = 0;
    if (!device_used(&used)) return kExitFailed;
    std::printf("amk-soak: %s on %s (%d workers); device memory in use after open %.1f MiB of %.1f MiB (%s)\n",
                program.c_str(), backend.c_str(), s.workers(), static_cast<double>(used) / kMiB,
                static_cast<double>(device_total) / kMiB, query);
  }

  std::vector<long> samples;             // VmRSS after every `every` tokens
  std::vector<int64_t> device_samples;  // device memory in use (bytes) at the same points, on a GPU
  int32_t token = first_token;
  int resets = 0;
  if (gpu) {
    std::printf("%10s %12s %16s\n", "tokens", "VmRSS_KiB", "device_used_MiB");
  } else {
    std::printf("%10s %12s\n", "tokens", "VmRSS_KiB");
  }
  for (int i = 1; i <= tokens; ++i) {
    if (s.max_positions() > 0 && s.position() >= s.max_positions()) {
      amk::Status st = s.reset();
      if (!st) {
        std::cerr << "amk-soak: reset after " << i - 1 << " tokens: " << st.message() << "\n";
        return kExitFailed;
      }
      ++resets;
      token = first_token;
    }
    auto r = s.step(token);
    if (!r.is_ok()) {
      std::cerr << "amk-soak: token " << i << ": " << r.status().message() << "\n";
      return kExitFailed;
    }
    token = r->token;
    if (i % every == 0) {
      samples.push_back(rss_kib());
      if (gpu) {
        uint64_t used = 0;
        if (!device_used(&used)) return kExitFailed;
        device_samples.push_back(static_cast<int64_t>(used));
        std::printf("%10d %12ld %16.1f\n", i, samples.back(), static_cast<double>(used) / kMiB);
      } else {
        std::printf("%10d %12ld\n", i, samples.back());
      }
      std::fflush(stdout);
    }
  }
  if (samples.front() < 0) {
    std::cerr << "amk-soak: cannot read VmRSS from /proc/self/status\n";
    return kExitFailed;
  }
  // The first sample is the baseline: by then the image, the workers (or the device arena and the
  // loaded kernel) and one full sequence of KV use exist, so any later growth is memory that
  // accumulates per token or per reset.
  const long growth = max_growth(samples);
  const bool rss_flat = growth <= limit_kib;
  std::printf("amk-soak: %d tokens on %s in %d sequences of up to %d positions (%d resets), %d worker(s); "
              "VmRSS first %ld KiB, last %ld KiB, max growth %ld KiB (limit %ld): %s\n",
              tokens, backend.c_str(), resets + 1, s.max_positions(), resets, s.workers(), samples.front(),
              samples.back(), growth, limit_kib, rss_flat ? "FLAT" : "GROWING");
  bool device_flat = true;
  if (gpu) {
    // Signed: a later sample below the first (another process freed memory) is no growth.
    const int64_t g = max_growth(device_samples);
    device_flat = g <= static_cast<int64_t>(max_device_growth_mib) * (int64_t{1} << 20);
    std::printf("amk-soak: device memory in use (%s, total - free, %.1f MiB total) first %.1f MiB, last %.1f MiB, "
                "max growth %lld bytes (limit %d MiB): %s\n",
                query, static_cast<double>(device_total) / kMiB, static_cast<double>(device_samples.front()) / kMiB,
                static_cast<double>(device_samples.back()) / kMiB, static_cast<long long>(g), max_device_growth_mib,
                device_flat ? "FLAT" : "GROWING");
  }
  return rss_flat && device_flat ? kExitFlat : kExitGrowing;
}
