// tests/loader/loader_test_util.h: shared helpers for the [loader] tests: temporary files, a small
// valid program (embed -> rmsnorm -> two projections split over two SMs -> argmax) with a matching
// safetensors file, and a queue-execution checker.
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/program.h"
#include "loader/dtype_cast.h"
#include "loader/loader.h"
#include "loader/safetensors.h"

namespace amk::loader::test {

/// A fresh path under the build tree, unique per process and call.
inline std::string temp_path(const std::string& stem) {
  static std::atomic<int> counter{0};
  return std::string(AMK_BINARY_DIR) + "/loader_test_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + stem;
}

/// Deletes a file when it goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& stem) : path(temp_path(stem)) {}
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

/// Raw bytes of `values` stored as `dtype`.
inline std::vector<uint8_t> encode(StDType dtype, const std::vector<float>& values) {
  const auto ir = st_dtype_to_ir(dtype);
  std::vector<uint8_t> bytes(values.size() * static_cast<size_t>(st_dtype_itemsize(dtype)));
  for (size_t i = 0; i < values.size(); ++i) dtype_store(*ir, bytes.data(), static_cast<int64_t>(i), values[i]);
  return bytes;
}

/// `n` distinct deterministic values: base + i / 64.
inline std::vector<float> ramp(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i) / 64.0f;
  return v;
}

inline ir::Buffer make_buffer(int32_t id, std::string name, ir::BufferKind kind, ir::DType dtype,
                              std::vector<int64_t> shape, std::optional<std::string> source = std::nullopt) {
  ir::Buffer b;
  b.id = ir::BufferId(id);
  b.name = std::move(name);
  b.kind = kind;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.source = std::move(source);
  return b;
}

inline ir::Task make_task(int32_t id, ir::Opcode op, std::vector<int32_t> in, std::vector<int32_t> out,
                          int32_t counter, std::vector<std::pair<int32_t, int64_t>> waits, int32_t sm,
                          std::string label) {
  ir::Task t;
  t.id = ir::TaskId(id);
  t.op = op;
  for (int32_t b : in) t.inputs.emplace_back(b);
  for (int32_t b : out) t.outputs.emplace_back(b);
  t.out_counter = ir::CounterId(counter);
  for (auto [c, th] : waits) t.waits.push_back(ir::Wait{ir::CounterId(c), th});
  t.sm = sm;
  t.label = std::move(label);
  return t;
}

// The small program's dimensions.
inline constexpr int64_t kVocab = 16;
inline constexpr int64_t kHidden = 8;

/// Buffer ids of the small program.
enum SmallBuf : int32_t { kTok, kEmbed, kNormW, kProj, kLmHead, kX, kH, kY, kLogits, kNext, kSmallBufCount };

/// A valid two-SM decode program. Task ids are deliberately NOT a topological order (SM 1's tasks
/// come first), so merging both SMs into one worker in task-list order would deadlock:
///   0 proj_b   (sm 1) GEMV  h -> y[4:8]         waits c1        -> c2
///   1 lm_a     (sm 1) GEMV  y -> logits[0:8]    waits c2 (2)    -> c3
///   2 argmax   (sm 1) ARGMAX logits -> next     waits c3 (2)    -> c4
///   3 embed    (sm 0) EMBED tok, table -> x                     -> c0
///   4 rmsnorm  (sm 0) RMSNORM x, w -> h         waits c0        -> c1
///   5 proj_a   (sm 0) GEMV  h -> y[0:4]         waits c1        -> c2
///   6 lm_b     (sm 0) GEMV  y -> logits[8:16]   waits c2 (2)    -> c3
/// With `paged`, x and y share page 0 (x is dead once rmsnorm has run) and h has page 1.
inline ir::Program small_program(bool paged = true) {
  using K = ir::BufferKind;
  using D = ir::DType;
  using O = ir::Opcode;
  ir::Program p;
  p.buffers = {
      make_buffer(kTok, "tok", K::IoInput, D::I32, {1}),
      make_buffer(kEmbed, "embed", K::Weight, D::F32, {kVocab, kHidden}, "model.embed_tokens.weight"),
      make_buffer(kNormW, "norm_w", K::Weight, D::F32, {kHidden}, "model.norm.weight"),
      make_buffer(kProj, "proj", K::Weight, D::F32, {kHidden, kHidden}, "proj.weight"),
      make_buffer(kLmHead, "lm_head", K::Weight, D::F32, {kVocab, kHidden}, "lm_head.weight"),
      make_buffer(kX, "x", K::Activation, D::F32, {1, kHidden}),
      make_buffer(kH, "h", K::Activation, D::F32, {1, kHidden}),
      make_buffer(kY, "y", K::Activation, D::F32, {1, kHidden}),
      make_buffer(kLogits, "logits", K::IoOutput, D::F32, {1, kVocab}),
      make_buffer(kNext, "next", K::IoOutput, D::I32, {1}),
  };
  for (int c = 0; c < 5; ++c) p.counters.push_back(ir::Counter{ir::CounterId(c), 0, ""});
  p.tasks = {
      make_task(0, O::GemvTile, {kH, kProj}, {kY}, 2, {{1, 1}}, 1, "proj_b"),
      make_task(1, O::GemvTile, {kY, kLmHead}, {kLogits}, 3, {{2, 2}}, 1, "lm_a"),
      make_task(2, O::SampleArgmax, {kLogits}, {kNext}, 4, {{3, 2}}, 1, "argmax"),
      make_task(3, O::Embed, {kTok, kEmbed}, {kX}, 0, {}, 0, "embed"),
      make_task(4, O::RmsNorm, {kX, kNormW}, {kH}, 1, {{0, 1}}, 0, "rmsnorm"),
      make_task(5, O::GemvTile, {kH, kProj}, {kY}, 2, {{1, 1}}, 0, "proj_a"),
      make_task(6, O::GemvTile, {kY, kLmHead}, {kLogits}, 3, {{2, 2}}, 0, "lm_b"),
  };
  auto gemv = [](ir::Task& t, int64_t n_off, int64_t n_tile) {
    t.params.set("K", int64_t{kHidden});
    t.params.set("N_tile", n_tile);
    t.params.set("n_off", n_off);
  };
  gemv(p.tasks[0], 4, 4);
  gemv(p.tasks[1], 0, 8);
  gemv(p.tasks[5], 0, 4);
  gemv(p.tasks[6], 8, 8);
  p.tasks[3].params.set("hidden", int64_t{kHidden});
  p.tasks[4].params.set("eps", 1e-5);
  p.tasks[4].params.set("hidden", int64_t{kHidden});
  if (paged) {
    ir::PageAllocation pages;
    pages.pages = {ir::Page{ir::PageId(0), ir::MemSpace::GlobalScratch, kHidden * 4, 0, 6},
                   ir::Page{ir::PageId(1), ir::MemSpace::GlobalScratch, kHidden * 4, 4, 5}};
    pages.buffer_to_page = {{ir::BufferId(kX), ir::PageId(0)},
                            {ir::BufferId(kH), ir::PageId(1)},
                            {ir::BufferId(kY), ir::PageId(0)}};
    p.pages = pages;
  }
  p.decode = {{"token_input", int32_t{kTok}}, {"logits", int32_t{kLogits}}, {"next_token", int32_t{kNext}},
              {"max_seq", 0}, {"vocab", kVocab}};
  return p;
}

/// The tensors small_program() binds, F32, filled with distinct ramps.
inline std::vector<TensorBytes> small_tensors() {
  return {
      {"model.embed_tokens.weight", StDType::F32, {kVocab, kHidden}, encode(StDType::F32, ramp(kVocab * kHidden, 0.0f))},
      {"model.norm.weight", StDType::F32, {kHidden}, encode(StDType::F32, ramp(kHidden, 1.0f))},
      {"proj.weight", StDType::F32, {kHidden, kHidden}, encode(StDType::F32, ramp(kHidden * kHidden, 2.0f))},
      {"lm_head.weight", StDType::F32, {kVocab, kHidden}, encode(StDType::F32, ramp(kVocab * kHidden, 3.0f))},
  };
}

/// Run the loaded queues sequentially (each round, every worker fires its head task when its waits
/// are met) and return how many tasks completed; the queues deadlock iff it is below n_instructions.
inline int32_t run_queues(const amk_program_t& v) {
  std::vector<uint32_t> counters(static_cast<size_t>(v.n_counters), 0);
  std::vector<int32_t> head(static_cast<size_t>(v.n_sms));
  for (int w = 0; w < v.n_sms; ++w) head[w] = v.sm_queue_offsets[w];
  int32_t done = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int w = 0; w < v.n_sms; ++w) {
      if (head[w] == v.sm_queue_offsets[w + 1]) continue;
      const amk_instruction_t& ins = v.instructions[v.sm_queue[head[w]]];
      bool ready = true;
      for (int i = 0; i < ins.n_waits; ++i) ready = ready && counters[ins.wait_counter[i]] >= ins.wait_threshold[i];
      if (!ready) continue;
      ++counters[ins.out_counter];
      ++head[w];
      ++done;
      progress = true;
    }
  }
  return done;
}

}  // namespace amk::loader::test
