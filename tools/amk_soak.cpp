// tools/amk_soak.cpp: amk-soak, a long decode on one Session that samples the process's resident
// memory (VmRSS) and says whether it stays flat (docs/RELIABILITY.md). The program's KV cache holds
// max_seq positions, so the decode runs as back-to-back sequences: at max_seq the session is
// reset() (position 0, caches zeroed) and the next sequence starts again from the prompt token, all
// in the same Session, so every launch, reset and buffer reuse of a long-running server is exercised.
// Exit codes: 0 flat; 1 bad input or a failed step; 2 usage; 5 resident memory grew past the limit.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vm/session.h"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"amk-soak: decode many tokens on one session (resetting at max_seq) and sample VmRSS"};
  std::string program, weights;
  int tokens = 10000, every = 1000, threads = 0, first_token = 1;
  long limit_kib = 1024;
  app.add_option("program", program, "program JSON")->required();
  app.add_option("--weights", weights, "safetensors weights")->required();
  app.add_option("--tokens", tokens, "tokens (launches) to decode")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--sample-every", every, "tokens between VmRSS samples")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU workers (0 = hardware threads)")->check(CLI::NonNegativeNumber);
  app.add_option("--first-token", first_token, "token each sequence starts from")->capture_default_str();
  app.add_option("--limit-kib", limit_kib, "allowed VmRSS growth after the first sample, KiB")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  amk::SessionOptions options;
  options.weights_path = weights;
  options.backend = amk::Backend::Cpu;
  options.threads = threads;
  auto session = amk::Session::open(program, options);
  if (!session.is_ok()) {
    std::cerr << "amk-soak: " << program << ": " << session.status().message() << "\n";
    return 1;
  }
  amk::Session& s = **session;
  std::vector<long> samples;  // VmRSS after every `every` tokens
  int32_t token = first_token;
  int resets = 0;
  std::printf("%10s %12s\n", "tokens", "VmRSS_KiB");
  for (int i = 1; i <= tokens; ++i) {
    if (s.max_positions() > 0 && s.position() >= s.max_positions()) {
      amk::Status st = s.reset();
      if (!st) {
        std::cerr << "amk-soak: reset after " << i - 1 << " tokens: " << st.message() << "\n";
        return 1;
      }
      ++resets;
      token = first_token;
    }
    auto r = s.step(token);
    if (!r.is_ok()) {
      std::cerr << "amk-soak: token " << i << ": " << r.status().message() << "\n";
      return 1;
    }
    token = r->token;
    if (i % every == 0) {
      samples.push_back(rss_kib());
      std::printf("%10d %12ld\n", i, samples.back());
      std::fflush(stdout);
    }
  }
  if (samples.size() < 2 || samples.front() < 0) {
    std::cerr << "amk-soak: need two VmRSS samples (use more --tokens or a smaller --sample-every)\n";
    return 2;
  }
  // The first sample is the baseline: by then the image, the workers and one full sequence of KV
  // use exist, so any later growth is memory that accumulates per token or per reset.
  const long growth = *std::max_element(samples.begin() + 1, samples.end()) - samples.front();
  const bool flat = growth <= limit_kib;
  std::printf("amk-soak: %d tokens in %d sequences of up to %d positions (%d resets), %d worker(s); "
              "VmRSS first %ld KiB, last %ld KiB, max growth %ld KiB (limit %ld): %s\n",
              tokens, resets + 1, s.max_positions(), resets, s.workers(), samples.front(), samples.back(), growth,
              limit_kib, flat ? "FLAT" : "GROWING");
  return flat ? 0 : 5;
}
