// tests/gpu/session_gpu_test.cpp: whole-model decode on the CUDA VM through the Session API: the
// bundled tiny Llama reproduces Hugging Face transformers (fixture made by
// tests/fixtures/make_golden.py), a bf16 lowering stays within the bf16 tolerance, and a
// 1000-step decode of a GPU-scheduled program does not drift from the CPU VM.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>

#include "gpu_harness.h"
#include "schedule/decode_preset.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "schedule/schedule_config.h"
#include "vm/cuda/cuda_executor.h"
#include "targets/registry.h"
#include "vm/golden_fixture.h"
#include "vm/session.h"

using namespace amk;

namespace {

std::unique_ptr<Session> open_session(const ir::Program& program, Backend backend, const std::string& weights,
                                      std::optional<uint64_t> seed = std::nullopt) {
  SessionOptions o;
  o.weights_path = weights;
  o.random_weights_seed = seed;
  o.backend = backend;
  o.threads = 2;
  auto s = Session::create(program, o);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  return std::move(*s);
}

ir::Program lower_tiny(ir::DType dtype, std::optional<ir::DType> weight_dtype, const char* target, int64_t max_seq,
                       int64_t max_positions = 0, const ir::ScheduleConfig& config = {}) {
  auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  if (max_positions > 0) model->max_position_embeddings = max_positions;
  auto t = targets::target_find(target);
  REQUIRE(t.is_ok());
  schedule::LowerOptions lo;
  lo.max_seq = max_seq;
  lo.dtype = dtype;
  lo.weight_dtype = weight_dtype;
  auto p = schedule::lower(*model, config, *t, lo);
  INFO(p.status().message());
  REQUIRE(p.is_ok());
  return std::move(*p);
}

/// Feed the prompt; check each position's logits against `ref` within `tol`; return the next token.
int32_t check_prompt(Session& s, const testing::Golden& g, const std::vector<float>& ref, double tol) {
  int32_t next = -1;
  for (size_t i = 0; i < g.prompt.size(); ++i) {
    auto r = s.step(g.prompt[i]);
    REQUIRE(r.is_ok());
    const double err = testing::relative_error(r->logits, &ref[i * static_cast<size_t>(g.vocab)], g.vocab);
    INFO("prompt position " << i << " relative error " << err);
    CHECK(err <= tol);
    next = r->token;
  }
  return next;
}

std::vector<int32_t> continue_greedy(Session& s, int32_t first, size_t n) {
  std::vector<int32_t> out{first};
  while (out.size() < n) {
    auto r = s.step(out.back());
    REQUIRE(r.is_ok());
    out.push_back(r->token);
  }
  return out;
}

}  // namespace

TEST_CASE("gpu session: the bundled tiny llama matches transformers (fp32 logits, 32 tokens)", "[gpu]") {
  gputest::require_gpu();
  const testing::Golden g = testing::load_golden();
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cuda;
  auto s = Session::open(std::string(AMK_SOURCE_DIR) + "/examples/tiny_llama/program.json", o);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  REQUIRE((*s)->backend() == "cuda");
  const int32_t next = check_prompt(**s, g, g.logits_f32, 1e-4);
  CHECK(continue_greedy(**s, next, g.tokens_f32.size()) == g.tokens_f32);
}

TEST_CASE("gpu session: a bf16 lowering matches transformers bf16 within 2e-2 and its 32 tokens", "[gpu]") {
  gputest::require_gpu();
  const testing::Golden g = testing::load_golden();
  const ir::Program p = lower_tiny(ir::DType::BF16, std::nullopt, "h100", 256);
  auto s = open_session(p, Backend::Cuda, testing::fixture_dir() + "model.safetensors");
  const int32_t next = check_prompt(*s, g, g.logits_bf16, 2e-2);
  CHECK(continue_greedy(*s, next, g.tokens_bf16.size()) == g.tokens_bf16);
}

// The schedule users get from `amk-compile --preset gpu-decode` (and amk-bench measures): every
// fusion, one tile per SM per stage, stage_balance, split-KV with the combine in head tiles where
// max_seq asks for partitions. Lowered for this device's SM count, as amk-compile lowers for its
// target's. Also with the attention inside o_proj (FUSED ATTENTION_GEMV_ADD; head_dim 32 keeps it
// off the weight stream: its halves, the attention kernel's generic path).
TEST_CASE("gpu session: the gpu-decode preset reproduces transformers' bf16 logits and 32 tokens", "[gpu]") {
  gputest::require_gpu();
  const testing::Golden g = testing::load_golden();
  const ir::GpuTarget target = gputest::device_target();  // the preset's auto choices are this device's
  const int64_t sms = target.num_sms;
  REQUIRE(sms > 0);
  auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  schedule::DecodePreset attention_in_o;
  attention_in_o.attention_in_o_proj = schedule::AttentionInOProj::On;
  schedule::DecodePreset rope_in_attention;  // the preset before rope in qkv became its default
  rope_in_attention.rope_in_qkv = false;
  // max_seq 256: one KV partition; 4096: two partitions per head and the head-tiled combine.
  const std::pair<int64_t, schedule::DecodePreset> cases[] = {{256, schedule::DecodePreset{}},
                                                              {4096, schedule::DecodePreset{}},
                                                              {256, rope_in_attention},
                                                              {4096, rope_in_attention},
                                                              {256, attention_in_o}};
  for (const auto& [max_seq, preset] : cases) {
    const bool fused_o = preset.attention_in_o_proj == schedule::AttentionInOProj::On;
    INFO("max_seq " << max_seq << " on " << sms << " SMs" << (fused_o ? ", attention in o_proj" : "")
                    << (preset.rope_in_qkv ? "" : ", rope in attention"));
    if (!fused_o)
      REQUIRE(schedule::decode_preset_kv_partitions(preset, *model, max_seq) == (max_seq > 2048 ? 2 : 1));
    auto cfg = schedule::schedule_config_from_json_text(schedule::decode_preset_json(*model, target, max_seq, preset),
                                                        "gpu-decode preset");
    INFO(cfg.status().message());
    REQUIRE(cfg.is_ok());
    const ir::Program p = lower_tiny(ir::DType::BF16, std::nullopt, "h100", max_seq, max_seq, *cfg);
    const auto fused = std::count_if(p.tasks.begin(), p.tasks.end(), [](const ir::Task& t) {
      return t.op == ir::Opcode::Fused && t.params.get_string("recipe") == std::string("ATTENTION_GEMV_ADD");
    });
    REQUIRE((fused > 0) == fused_o);
    auto s = open_session(p, Backend::Cuda, testing::fixture_dir() + "model.safetensors");
    const int32_t next = check_prompt(*s, g, g.logits_bf16, 2e-2);
    CHECK(continue_greedy(*s, next, g.tokens_bf16.size()) == g.tokens_bf16);
  }
}

TEST_CASE("gpu session: with small fused tiles the weight ring carries them and the 32 bf16 tokens hold", "[gpu]") {
  gputest::require_gpu();
  const testing::Golden g = testing::load_golden();
  // 16-row tiles (8 KiB of bf16 weights at K = 256) under every fusion: every GEMV-like task reads
  // its weights from the shared-memory weight stream.
  auto cfg = schedule::schedule_config_from_json_text(
      R"({"fusion_grouping": [["rmsnorm","q_proj","k_proj","v_proj"], ["rmsnorm","gate_proj","up_proj"],
          ["o_proj","residual_add"], ["silu_mul","down_proj","residual_add"], ["final_norm","lm_head","argmax"],
          ["rope","kv_append"]],
          "tiling": {"gemv": {"N_tile": 16}}})",
      "test schedule");
  REQUIRE(cfg.is_ok());
  const ir::Program p = lower_tiny(ir::DType::BF16, std::nullopt, "h100", 256, 0, *cfg);
  {
    loader::LoadOptions lo;
    lo.weights_path = testing::fixture_dir() + "model.safetensors";
    const vm::GpuKernelReport rep = gputest::cuda_kernel_report(p, lo);
    INFO(rep.summary());
    if (gputest::device_sm_major() >= 9) {
      CHECK(rep.ring_slots >= 2);
      CHECK(rep.streamed_tasks > 0);
    }
  }
  auto s = open_session(p, Backend::Cuda, testing::fixture_dir() + "model.safetensors");
  const int32_t next = check_prompt(*s, g, g.logits_bf16, 2e-2);
  CHECK(continue_greedy(*s, next, g.tokens_bf16.size()) == g.tokens_bf16);
}

TEST_CASE("gpu session: 1000 decode steps do not drift from the CPU VM", "[gpu]") {
  gputest::require_gpu();
  // A GPU-scheduled program (132 SMs, load-balanced) with random f32 weights and a 1024-row cache.
  const ir::Program p = lower_tiny(ir::DType::F32, std::nullopt, "h100", 1024, 1024);
  auto cpu = open_session(p, Backend::Cpu, "", 11);
  auto gpu = open_session(p, Backend::Cuda, "", 11);
  int32_t token = 1;
  int mismatches = 0;
  double worst = 0.0;
  for (int step = 0; step < 1000; ++step) {
    auto c = cpu->step(token);
    auto d = gpu->step(token);
    REQUIRE(c.is_ok());
    REQUIRE(d.is_ok());
    const double err = testing::relative_error(d->logits, c->logits.data(), c->logits.size());
    worst = std::max(worst, err);
    if (d->token != c->token) {
      // Only a near-tie may flip: the CPU's top two must be within rounding of each other.
      std::vector<float> sorted = c->logits;
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
      INFO("step " << step << " cpu " << c->token << " gpu " << d->token << " top-2 gap " << sorted[0] - sorted[1]);
      CHECK(sorted[0] - sorted[1] <= 1e-4f * std::abs(sorted[0]));
      ++mismatches;
    }
    token = c->token;  // teacher-forced on the CPU's choice so one flip cannot cascade
  }
  INFO("worst relative logits error over 1000 steps: " << worst);
  CHECK(worst <= 1e-4);
  CHECK(mismatches <= 2);
}
#endif  // AMK_GPU_TESTS
