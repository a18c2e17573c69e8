// tests/gpu/baseline_gpu_test.cpp: the graphed cuBLAS baseline of amk-bench decode (tools/bench/)
// on the bundled tiny Llama (bf16 safetensors uploaded as stored, rope table from the loader's
// own generator): the prompt must reproduce transformers' bf16 logits within the bf16 session
// test's tolerance and the greedy continuation its 32 tokens. Bad input is refused by name.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "gpu_harness.h"
#include "loader/safetensors.h"
#include "loader/synth_constants.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/gpu.h"
#include "targets/registry.h"
#include "tools/bench/cublas_baseline.h"
#include "vm/golden_fixture.h"
#include "vm/session.h"

using namespace amk;
using Catch::Matchers::Contains;

namespace {

/// Device copies of the fixture's tensors by HF name, plus the rope table under "rope"; freed
/// with the object.
struct DeviceTensors {
  std::map<std::string, void*> by_name;
  DeviceTensors() = default;
  DeviceTensors(const DeviceTensors&) = delete;
  DeviceTensors& operator=(const DeviceTensors&) = delete;
  ~DeviceTensors() {
    for (auto& entry : by_name) (void)gpu::free_device(entry.second);
  }
  Status upload(const std::string& name, const void* host, size_t bytes) {
    AMK_GPU_TRY(gpu::malloc_device(&by_name[name], bytes));
    AMK_GPU_TRY(gpu::memcpy_h2d(by_name[name], host, bytes));
    return Status::ok();
  }
  const void* at(const std::string& name) const {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  }
};

/// ModelWeights by the HF names amk's lowering gives its WEIGHT buffers as `source`
/// (docs/SCHEDULE.md "Weights"; amk-bench maps a program's buffers the same way).
bench::ModelWeights weights_by_name(const schedule::ModelConfig& m, const DeviceTensors& d) {
  bench::ModelWeights w;
  w.embed = d.at("model.embed_tokens.weight");
  w.final_norm = d.at("model.norm.weight");
  w.lm_head = m.tie_word_embeddings ? w.embed : d.at("lm_head.weight");
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.layers.push_back({d.at(p + "input_layernorm.weight"), d.at(p + "self_attn.q_proj.weight"),
                        d.at(p + "self_attn.k_proj.weight"), d.at(p + "self_attn.v_proj.weight"),
                        d.at(p + "self_attn.o_proj.weight"), d.at(p + "post_attention_layernorm.weight"),
                        d.at(p + "mlp.gate_proj.weight"), d.at(p + "mlp.up_proj.weight"),
                        d.at(p + "mlp.down_proj.weight")});
  }
  w.rope_inv_freq = static_cast<const float*>(d.at("rope"));
  return w;
}

bench::LlamaShape shape_of(const schedule::ModelConfig& m, int64_t max_seq) {
  bench::LlamaShape s;
  s.hidden = m.hidden_size;
  s.n_layers = m.num_hidden_layers;
  s.n_heads = m.num_attention_heads;
  s.n_kv_heads = m.num_key_value_heads;
  s.head_dim = m.head_dim;
  s.intermediate = m.intermediate_size;
  s.vocab = m.vocab_size;
  s.max_seq = max_seq;
  s.rms_eps = static_cast<float>(m.rms_norm_eps);
  return s;
}

/// Upload the tiny fixture (bf16 as stored; the rope table from the loader's generator behind
/// `amk:rope_inv_freq?theta=..&dim=..`, so rope matches amk's) and create the baseline over it.
void create_tiny(const schedule::ModelConfig& model, int64_t max_seq, DeviceTensors* d,
                 std::unique_ptr<bench::CublasGraphBaseline>* b) {
  auto st = loader::SafetensorsFile::open(testing::fixture_dir() + "model.safetensors");
  INFO(st.status().message());
  REQUIRE(st.is_ok());
  for (const loader::TensorInfo& t : st->tensors()) {
    INFO("tensor " << t.name);
    REQUIRE(t.dtype == loader::StDType::BF16);
    REQUIRE(d->upload(t.name, st->data(t), t.nbytes()).is_ok());
  }
  loader::RopeInvFreqSpec spec;
  spec.theta = model.rope_theta;
  spec.dim = static_cast<int>(model.head_dim);
  const std::vector<float> rope = loader::rope_inv_freq(spec);
  REQUIRE(d->upload("rope", rope.data(), rope.size() * sizeof(float)).is_ok());
  const Status created = bench::CublasGraphBaseline::create(shape_of(model, max_seq), weights_by_name(model, *d), b);
  INFO(created.message());
  REQUIRE(created.is_ok());
}

}  // namespace

TEST_CASE("cublas baseline: the tiny llama matches transformers bf16 within 2e-2 and its 32 tokens", "[gpu]") {
  gputest::require_gpu();
  const testing::Golden g = testing::load_golden();
  auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  constexpr int64_t kMaxSeq = 256;
  DeviceTensors d;
  std::unique_ptr<bench::CublasGraphBaseline> b;
  create_tiny(*model, kMaxSeq, &d, &b);

  int32_t next = -1;
  std::vector<float> logits;
  for (size_t i = 0; i < g.prompt.size(); ++i) {
    const Status s = b->step(g.prompt[i], static_cast<int32_t>(i), &next);
    INFO(s.message());
    REQUIRE(s.is_ok());
    REQUIRE(b->read_logits(&logits).is_ok());
    REQUIRE(logits.size() == static_cast<size_t>(g.vocab));
    const double err = testing::relative_error(logits, &g.logits_bf16[i * static_cast<size_t>(g.vocab)], g.vocab);
    INFO("prompt position " << i << " relative error " << err);
    CHECK(err <= 2e-2);
  }
  std::vector<int32_t> tokens{next};
  for (int32_t pos = static_cast<int32_t>(g.prompt.size()); tokens.size() < g.tokens_bf16.size(); ++pos) {
    REQUIRE(b->step(tokens.back(), pos, &next).is_ok());
    tokens.push_back(next);
  }
  CHECK(tokens == g.tokens_bf16);

  // Timing replays the same graph; the refusals name what is wrong.
  std::vector<double> ms;
  REQUIRE(b->time_steps(tokens.back(), 40, 3, &ms).is_ok());
  REQUIRE(ms.size() == 3);
  for (double t : ms) CHECK(t > 0.0);
  const Status far = b->step(1, static_cast<int32_t>(kMaxSeq), &next);
  CHECK(far.code() == StatusCode::InvalidArgument);
  CHECK_THAT(far.message(), Contains("pos 256") && Contains("max_seq"));
  const Status oov = b->step(g.vocab, 0, &next);
  CHECK_THAT(oov.message(), Contains("token 1024") && Contains("vocabulary"));
}

TEST_CASE("cublas baseline: 250 steps (two attention splits) track amk's CPU VM on a bf16 lowering", "[gpu]") {
  gputest::require_gpu();
  auto model = schedule::model_config_load(testing::fixture_dir() + "config.json");
  REQUIRE(model.is_ok());
  auto target = targets::target_find("h100");
  REQUIRE(target.is_ok());
  constexpr int64_t kMaxSeq = 256;
  schedule::LowerOptions lo;
  lo.max_seq = kMaxSeq;
  lo.dtype = ir::DType::BF16;
  auto program = schedule::lower(*model, ir::ScheduleConfig{}, *target, lo);
  REQUIRE(program.is_ok());
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cpu;
  o.threads = 2;
  auto cpu = Session::create(*program, o);
  INFO(cpu.status().message());
  REQUIRE(cpu.is_ok());
  DeviceTensors d;
  std::unique_ptr<bench::CublasGraphBaseline> b;
  create_tiny(*model, kMaxSeq, &d, &b);

  // Teacher-forced on amk's token so one near-tie flip cannot cascade; positions past 128 make the
  // combine merge two splits. Two bf16 decoders round differently: bf16-level agreement only.
  int32_t token = 1, next = -1;
  int flips = 0;
  std::vector<float> logits;
  for (int32_t pos = 0; pos < 250; ++pos) {
    auto c = (*cpu)->step(token);
    REQUIRE(c.is_ok());
    REQUIRE(b->step(token, pos, &next).is_ok());
    REQUIRE(b->read_logits(&logits).is_ok());
    const double err = testing::relative_error(logits, c->logits.data(), c->logits.size());
    INFO("pos " << pos << " relative error " << err);
    CHECK(err <= 3e-2);
    flips += next != c->token;
    token = c->token;
  }
  CHECK(flips <= 12);
}

TEST_CASE("cublas baseline: create() refuses a bad shape before touching the device", "[gpu]") {
  gputest::require_gpu();
  bench::LlamaShape s;
  s.hidden = 256;
  s.n_layers = 1;
  s.n_heads = 8;
  s.n_kv_heads = 3;
  s.head_dim = 32;
  s.intermediate = 384;
  s.vocab = 1024;
  s.max_seq = 64;
  std::unique_ptr<bench::CublasGraphBaseline> b;
  Status st = bench::CublasGraphBaseline::create(s, bench::ModelWeights{}, &b);
  CHECK(st.code() == StatusCode::InvalidArgument);
  CHECK_THAT(st.message(), Contains("n_heads (8) must be a multiple of n_kv_heads (3)"));
  CHECK(b == nullptr);

  s.n_kv_heads = 2;
  s.head_dim = 33;
  st = bench::CublasGraphBaseline::create(s, bench::ModelWeights{}, &b);
  CHECK_THAT(st.message(), Contains("head_dim must be even"));

  s.head_dim = 32;  // a good shape, but no weights
  st = bench::CublasGraphBaseline::create(s, bench::ModelWeights{}, &b);
  CHECK_THAT(st.message(), Contains("ModelWeights.layers has 0 entries"));
}
#endif  // AMK_GPU_TESTS
