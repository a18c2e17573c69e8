// tests/vm/toy_program.h: a small hand-built decode program (EMBED -> RMSNORM -> GEMV tiles ->
// SAMPLE_ARGMAX) for exercising the VMs' protocol, plus an independent fp64 reference of it.
#pragma once
#include <cmath>
#include <vector>

#include "ir/program.h"

namespace amk::testing {

inline constexpr int kToyVocab = 16;
inline constexpr int kToyHidden = 8;
inline constexpr int kToyTile = 4;

/// Buffers: 0 tok, 1 table, 2 h, 3 norm_w, 4 hn, 5 W, 6 logits, 7 next. Tasks spread over 3 SMs.
inline ir::Program toy_program() {
  using namespace ir;
  Program p;
  auto buf = [&](const char* name, BufferKind kind, DType dt, std::vector<int64_t> shape, const char* source) {
    Buffer b;
    b.id = BufferId(static_cast<int32_t>(p.buffers.size()));
    b.name = name;
    b.kind = kind;
    b.dtype = dt;
    b.shape = std::move(shape);
    if (source != nullptr) b.source = source;
    p.buffers.push_back(b);
  };
  buf("tok", BufferKind::IoInput, DType::I32, {1}, nullptr);
  buf("table", BufferKind::Weight, DType::F32, {kToyVocab, kToyHidden}, "table");
  buf("h", BufferKind::Activation, DType::F32, {1, kToyHidden}, nullptr);
  buf("norm_w", BufferKind::Weight, DType::F32, {kToyHidden}, "norm_w");
  buf("hn", BufferKind::Activation, DType::F32, {1, kToyHidden}, nullptr);
  buf("W", BufferKind::Weight, DType::F32, {kToyVocab, kToyHidden}, "W");
  buf("logits", BufferKind::IoOutput, DType::F32, {1, kToyVocab}, nullptr);
  buf("next", BufferKind::IoOutput, DType::I32, {1}, nullptr);
  for (int c = 0; c < 4; ++c) p.counters.push_back(Counter{CounterId(c), 0, "stage " + std::to_string(c)});
  auto task = [&](Opcode op, std::vector<int> in, std::vector<int> out, int counter, std::vector<Wait> waits,
                  int sm, const std::string& label) -> Task& {
    Task t;
    t.id = TaskId(static_cast<int32_t>(p.tasks.size()));
    t.op = op;
    for (int i : in) t.inputs.push_back(BufferId(i));
    for (int o : out) t.outputs.push_back(BufferId(o));
    t.out_counter = CounterId(counter);
    t.waits = std::move(waits);
    t.sm = sm;
    t.label = label;
    p.tasks.push_back(t);
    return p.tasks.back();
  };
  task(Opcode::Embed, {0, 1}, {2}, 0, {}, 0, "embed").params.set("hidden", int64_t{kToyHidden});
  Task& norm = task(Opcode::RmsNorm, {2, 3}, {4}, 1, {Wait{CounterId(0), 1}}, 1, "norm");
  norm.params.set("eps", 1e-5);
  norm.params.set("hidden", int64_t{kToyHidden});
  for (int t = 0; t < kToyVocab / kToyTile; ++t) {
    Task& g = task(Opcode::GemvTile, {4, 5}, {6}, 2, {Wait{CounterId(1), 1}}, t % 3, "lm_head.t" + std::to_string(t));
    g.params.set("K", int64_t{kToyHidden});
    g.params.set("N_tile", int64_t{kToyTile});
    g.params.set("n_off", int64_t{t * kToyTile});
  }
  task(Opcode::SampleArgmax, {6}, {7}, 3, {Wait{CounterId(2), kToyVocab / kToyTile}}, 2, "argmax");
  p.decode = {{"token_input", 0}, {"logits", 6}, {"next_token", 7}, {"max_seq", 0}, {"vocab", kToyVocab}};
  return p;
}

/// fp64 reference of toy_program for token `tok`, given the weights as float arrays.
inline std::vector<double> toy_reference_logits(int tok, const float* table, const float* norm_w, const float* W) {
  std::vector<double> h(table + tok * kToyHidden, table + (tok + 1) * kToyHidden);
  double ss = 0.0;
  for (double v : h) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / kToyHidden + 1e-5);
  std::vector<double> logits(kToyVocab, 0.0);
  for (int n = 0; n < kToyVocab; ++n)
    for (int k = 0; k < kToyHidden; ++k) logits[n] += h[k] * inv * norm_w[k] * W[n * kToyHidden + k];
  return logits;
}

}  // namespace amk::testing
