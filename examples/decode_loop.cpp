// examples/decode_loop.cpp: a host decode loop on the Session API, the smallest useful amk host.
//   decode_loop PROGRAM.json MODEL.safetensors [N]
// Feeds a fixed prompt, then greedily feeds back each sampled token, printing it and its latency.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vm/session.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROGRAM.json MODEL.safetensors [N]\n", argv[0]);
    return 2;
  }
  const int n = argc > 3 ? std::atoi(argv[3]) : 16;

  amk::SessionOptions options;
  options.weights_path = argv[2];
  auto session = amk::Session::open(argv[1], options);  // loads, validates, binds weights
  if (!session) {
    std::fprintf(stderr, "decode_loop: %s\n", session.status().message().c_str());
    return 1;
  }
  amk::Session& s = **session;
  std::printf("backend %s, %d workers, vocab %d, max positions %d\n", s.backend().c_str(), s.workers(),
              s.vocab_size(), s.max_positions());

  const std::vector<int32_t> prompt = {1, 17, 345};
  int32_t token = -1;
  for (int32_t t : prompt) {  // prefill one token per launch: the KV cache fills as we go
    auto r = s.step(t);
    if (!r) return std::fprintf(stderr, "decode_loop: %s\n", r.status().message().c_str()), 1;
    token = r->token;
  }
  for (int i = 0; i < n && s.position() < s.max_positions(); ++i) {
    std::printf("pos %3d  token %5d\n", s.position(), token);
    auto r = s.step(token);  // same instruction table every step; only the step block changes
    if (!r) return std::fprintf(stderr, "decode_loop: %s\n", r.status().message().c_str()), 1;
    std::printf("         %.1f us\n", r->latency_us);
    token = r->token;
  }
  return 0;
}
