// tests/gpu/mlp_fold_gpu_test.cpp: the MLP fold (docs/FOLD.md) on the CUDA VM. The tiny Llama
// lowered with the fold reproduces Hugging Face transformers on the plain fold (AMK_RING=0) and,
// on sm_90, on the fold kernel's weight-stream fold (whole columns per chunk, and columns
// spanning chunks), in fp32 and bf16; two runs agree to fp32 rounding (their atomic adds may land
// in another order) and on every token.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "gpu_harness.h"
#include "loader/loader.h"
#include "schedule/decode_preset.h"
#include "schedule/fusion.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/golden_fixture.h"
#include "vm/session.h"

using namespace amk;

namespace {

/// The gpu-decode preset with the fold, lowered for this device's SMs.
ir::Program lower_fold(ir::DType dtype, std::optional<ir::DType> weight_dtype) {
  schedule::DecodePreset preset;
  preset.mlp_fold = schedule::MlpFold::On;
  return gputest::lower_tiny_preset(preset, dtype, weight_dtype);
}

std::unique_ptr<Session> open_cuda(const ir::Program& p) {
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cuda;
  auto s = Session::create(p, o);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  return std::move(*s);
}

/// Prompt logits of every position, then the greedy continuation to `n` tokens.
void run_golden(Session& s, const testing::Golden& g, std::vector<std::vector<float>>& logits, std::vector<int32_t>& tokens,
                size_t n) {
  int32_t next = -1;
  for (int32_t t : g.prompt) {
    auto r = s.step(t);
    REQUIRE(r.is_ok());
    logits.push_back(r->logits);
    next = r->token;
  }
  tokens = {next};
  while (tokens.size() < n) {
    auto r = s.step(tokens.back());
    REQUIRE(r.is_ok());
    tokens.push_back(r->token);
  }
}


/// Each prompt position's logits within relative L2 error `tol` of the golden row `ref`.
void check_prompt_logits(const std::vector<std::vector<float>>& logits, const std::vector<float>& ref, int64_t vocab,
                         double tol, const char* what) {
  for (size_t i = 0; i < logits.size(); ++i) {
    const double err = testing::relative_error(logits[i], &ref[i * static_cast<size_t>(vocab)], vocab);
    INFO(what << ", prompt position " << i << " relative error " << err);
    CHECK(err <= tol);
  }
}

/// One mode of the tiny Llama's fold decode, fp32 then bf16: "ring" (the weight stream with its
/// default slots: a task's columns in one chunk), "1 KiB slots" (1 or 2 rows a chunk: a column's
/// gate, up and down^T rows in different chunks) or "no ring" (AMK_RING=0: the plain fold). One
/// test case per mode, so a sanitizer can take each alone (racecheck of all three runs past 360 s
/// on an H100).
void check_fold_mode(const std::string& mode) {
  const testing::Golden g = testing::load_golden();
  const bool ring = mode != "no ring";
  std::unique_ptr<gputest::ScopedEnv> env;
  if (!ring) env = std::make_unique<gputest::ScopedEnv>("AMK_RING", "0");
  if (mode == "1 KiB slots") env = std::make_unique<gputest::ScopedEnv>("AMK_RING_SLOT_KIB", "1");
  INFO((ring ? mode : "AMK_RING=0: the plain fold"));
  {
    const ir::Program p = lower_fold(ir::DType::F32, ir::DType::BF16);
    if (ring && gputest::device_sm_major() >= 9) {
      // Every GEMV-like task rides the ring (fold_stream_chunk_bytes admits the tiny shapes).
      loader::LoadOptions lo;
      lo.weights_path = testing::fixture_dir() + "model.safetensors";
      const vm::GpuKernelReport rep = gputest::cuda_kernel_report(p, lo);
      INFO(rep.summary());
      const auto folds = std::count_if(p.tasks.begin(), p.tasks.end(), [](const ir::Task& t) {
        return t.params.get_string("recipe") == std::string("RMSNORM_MLP_FOLD");
      });
      CHECK(folds > 0);
      // A program with folds runs the fold kernel, whose folds ride the ring (the default
      // kernel would run them on the plain path: persistent_kernel.h, KernelEntry).
      CHECK(rep.kernel == "fold");
      CHECK(rep.fold_streams);
      CHECK(rep.streamed_tasks == folds + gputest::count_gemv_like(p));
    }
    auto s = open_cuda(p);
    CHECK_FALSE(s->bit_reproducible());
    std::vector<std::vector<float>> logits;
    std::vector<int32_t> tokens;
    run_golden(*s, g, logits, tokens, g.tokens_f32.size());
    check_prompt_logits(logits, g.logits_f32, g.vocab, 1e-4, "fp32");
    CHECK(tokens == g.tokens_f32);
    // A second session: the adds may land in another order, so the logits agree to fp32
    // rounding, not bit for bit, and the tokens exactly.
    auto again = open_cuda(p);
    std::vector<std::vector<float>> logits2;
    std::vector<int32_t> tokens2;
    run_golden(*again, g, logits2, tokens2, g.tokens_f32.size());
    CHECK(tokens2 == tokens);
    for (size_t i = 0; i < logits.size(); ++i) CHECK(testing::relative_error(logits2[i], logits[i].data(), logits[i].size()) <= 1e-5);
  }
  {
    const ir::Program p = lower_fold(ir::DType::BF16, std::nullopt);
    auto s = open_cuda(p);
    std::vector<std::vector<float>> logits;
    std::vector<int32_t> tokens;
    run_golden(*s, g, logits, tokens, g.tokens_bf16.size());
    check_prompt_logits(logits, g.logits_bf16, g.vocab, 2e-2, "bf16");
    CHECK(tokens == g.tokens_bf16);
  }
}

}  // namespace

TEST_CASE("gpu fold on the weight ring: the tiny llama with the MLP fold matches transformers (fp32 and bf16)", "[gpu]") {
  gputest::require_gpu();
  check_fold_mode("ring");
}

TEST_CASE("gpu fold in 1 KiB ring slots: the tiny llama with the MLP fold matches transformers (fp32 and bf16)", "[gpu]") {
  gputest::require_gpu();
  check_fold_mode("1 KiB slots");
}

TEST_CASE("gpu fold without the ring: the tiny llama with the MLP fold matches transformers (fp32 and bf16)", "[gpu]") {
  gputest::require_gpu();
  check_fold_mode("no ring");
}

#endif  // AMK_GPU_TESTS
