// tests/vm/golden_fixture.h: reads the Hugging Face reference fixture (tests/fixtures/tiny_llama/,
// made by tests/fixtures/make_golden.py) and compares logits the way the issue states.
#pragma once
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace amk::testing {

struct Golden {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens_f32;
  std::vector<int32_t> tokens_bf16;
  int vocab = 0;
  std::vector<float> logits_f32;   ///< [prompt_len, vocab]
  std::vector<float> logits_bf16;  ///< [prompt_len, vocab]
};

inline std::string fixture_dir() { return std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/"; }

inline std::vector<float> read_f32(const std::string& path, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!f) v.clear();
  return v;
}

inline Golden load_golden() {
  Golden g;
  std::ifstream f(fixture_dir() + "golden.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  g.prompt = j.at("prompt").get<std::vector<int32_t>>();
  g.tokens_f32 = j.at("tokens_f32").get<std::vector<int32_t>>();
  g.tokens_bf16 = j.at("tokens_bf16").get<std::vector<int32_t>>();
  g.vocab = j.at("vocab_size").get<int>();
  g.logits_f32 = read_f32(fixture_dir() + "logits_f32.bin", g.prompt.size() * static_cast<size_t>(g.vocab));
  g.logits_bf16 = read_f32(fixture_dir() + "logits_bf16.bin", g.prompt.size() * static_cast<size_t>(g.vocab));
  return g;
}

/// ||got - ref|| / ||ref|| over one row of logits.
inline double relative_error(const std::vector<float>& got, const float* ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace amk::testing
