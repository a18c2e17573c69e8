// tests/gpu/rope_qkv_gpu_test.cpp: rope in the q / k GEMVs (docs/ROPE_IN_GEMV.md) on the CUDA VM.
// The tiny Llama lowered by the gpu-decode preset with rope_in_qkv reproduces Hugging Face
// transformers on the weight stream (sm_90: every q / k / v tile rides the ring) and on the plain
// GEMV path (AMK_RING=0), in fp32 and bf16; and with seeded random f32 weights in 3 KiB slots,
// where a chunk's 3 rows are cut to 2 so that it holds whole rope pairs, it equals the CPU VM.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu_harness.h"
#include "loader/loader.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "targets/registry.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/golden_fixture.h"
#include "vm/session.h"

using namespace amk;

namespace {

ir::Program lower_rope_qkv(ir::DType dtype, std::optional<ir::DType> weight_dtype) {
  schedule::DecodePreset preset;
  preset.rope_in_qkv = true;
  preset.mlp_fold = schedule::MlpFold::Off;  // the rope kernel's path (the fold's tests have their own)
  return gputest::lower_tiny_preset(preset, dtype, weight_dtype);
}

// The prompt's logits within `tol` of `ref`, then the greedy tokens.
void check_golden(const ir::Program& p, const testing::Golden& g, const std::vector<float>& ref,
                  const std::vector<int32_t>& want, double tol) {
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cuda;
  auto s = Session::create(p, o);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  int32_t next = -1;
  for (size_t i = 0; i < g.prompt.size(); ++i) {
    auto r = (*s)->step(g.prompt[i]);
    REQUIRE(r.is_ok());
    const double err = testing::relative_error(r->logits, &ref[i * static_cast<size_t>(g.vocab)], g.vocab);
    INFO("prompt position " << i << " relative error " << err);
    CHECK(err <= tol);
    next = r->token;
  }
  std::vector<int32_t> tokens{next};
  while (tokens.size() < want.size()) {
    auto r = (*s)->step(tokens.back());
    REQUIRE(r.is_ok());
    tokens.push_back(r->token);
  }
  CHECK(tokens == want);
}

// One mode of the tiny Llama's rope-in-qkv decode: "ring" (the fixture's bf16 weights on the weight
// ring: the after-loop rotation from the shared scratch), "3 KiB slots, f32 random weights" (f32
// rows, chunks of a few rows, against the CPU VM), "no ring" (the plain path).
void check_mode(const std::string& mode) {
  const testing::Golden g = testing::load_golden();
  INFO(mode);
  const bool ring = mode != "no ring", f32_rows = mode != "ring" && ring;
  std::unique_ptr<gputest::ScopedEnv> env;
  if (!ring) env = std::make_unique<gputest::ScopedEnv>("AMK_RING", "0");
  if (f32_rows) env = std::make_unique<gputest::ScopedEnv>("AMK_RING_SLOT_KIB", "3");
  const ir::Program p = lower_rope_qkv(ir::DType::F32, f32_rows ? ir::DType::F32 : ir::DType::BF16);
  if (ring && gputest::device_sm_major() >= 9) {
    loader::LoadOptions lo;
    if (f32_rows) lo.random_weights_seed = 7;  // the fixture's tensors are bf16
    else lo.weights_path = testing::fixture_dir() + "model.safetensors";
    const vm::GpuKernelReport rep = gputest::cuda_kernel_report(p, lo);
    INFO(rep.summary());
    const auto step_gemvs = std::count_if(p.tasks.begin(), p.tasks.end(), [](const ir::Task& t) {
      return t.op == ir::Opcode::Fused && t.params.get_string("recipe")->rfind("RMSNORM_GEMV_", 0) == 0;
    });
    CHECK(step_gemvs > 0);
    CHECK(rep.kernel == "rope");  // the kernel with step-position GEMVs (persistent_kernel.h)
    CHECK(rep.streamed_tasks == gputest::count_gemv_like(p));  // the rotating and appending tiles ride the ring too
  }
  if (f32_rows) {  // the same random model on the CPU VM: logits to fp32 rounding, every token
    gputest::check_gpu_equals_cpu_random(p, 7, g.prompt.front(), 16, 1e-4);
    return;
  }
  check_golden(p, g, g.logits_f32, g.tokens_f32, 1e-4);
  check_golden(lower_rope_qkv(ir::DType::BF16, std::nullopt), g, g.logits_bf16, g.tokens_bf16, 2e-2);
}

}  // namespace

// Two cases so that a sanitizer can take the streamed modes alone (tools/device-check.sh runs
// racecheck on the first: the whole test took over 225 s under racecheck on an H100).
TEST_CASE("gpu rope in qkv on the weight ring: the tiny llama matches transformers and the CPU VM", "[gpu]") {
  gputest::require_gpu();
  for (const char* mode : {"ring", "3 KiB slots, f32 random weights"}) check_mode(mode);
}

TEST_CASE("gpu rope in qkv without the ring: the tiny llama matches transformers (fp32 and bf16)", "[gpu]") {
  gputest::require_gpu();
  check_mode("no ring");
}

#endif  // AMK_GPU_TESTS
