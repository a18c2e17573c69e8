// tests/loader/bind_weights_test.cpp: WEIGHT/CONST binding by `source`: zero-copy and copied
// binding, each failure (missing tensor, shape, dtype, no file) with its message, squeezed
// shapes, seeded random weights, and binding against the real tiny_llama fixture.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "loader/bind_weights.h"
#include "loader/dtype_cast.h"
#include "loader/loader.h"
#include "loader/safetensors.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

Result<std::unique_ptr<ProgramImage>> load_with(const ir::Program& p, const std::string& weights) {
  LoadOptions o;
  o.weights_path = weights;
  return load_program(p, o);
}

/// small_tensors() with tensor `name` replaced (or dropped when `replacement` has an empty name).
std::vector<TensorBytes> tensors_with(const std::string& name, const TensorBytes& replacement) {
  std::vector<TensorBytes> out;
  for (TensorBytes& t : small_tensors()) {
    if (t.name != name) out.push_back(std::move(t));
    else if (!replacement.name.empty()) out.push_back(replacement);
  }
  return out;
}

}  // namespace

TEST_CASE("bind: weights bind zero-copy into the mapped file", "[loader]") {
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, small_tensors()).is_ok());
  auto img = load_with(small_program(), w.path);
  REQUIRE(img.is_ok());
  const SafetensorsFile* file = (*img)->weights();
  REQUIRE(file != nullptr);
  const amk_program_t& v = (*img)->view();
  CHECK(v.buffers[kEmbed].ptr == file->data(*file->find("model.embed_tokens.weight")));
  CHECK(v.buffers[kProj].ptr == file->data(*file->find("proj.weight")));
  CHECK(dtype_load(ir::DType::F32, v.buffers[kNormW].ptr, 3) == ramp(kHidden, 1.0f)[3]);
  CHECK(dtype_load(ir::DType::F32, v.buffers[kLmHead].ptr, 127) == ramp(kVocab * kHidden, 3.0f)[127]);
}

TEST_CASE("bind: a misaligned tensor is copied into aligned memory", "[loader]") {
  // A 2-byte U8 tensor first puts the F32 norm weights at data offset 2.
  std::vector<TensorBytes> tensors = {{"pad", StDType::U8, {2}, {7, 7}}};
  for (TensorBytes& t : small_tensors()) tensors.push_back(std::move(t));
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, tensors).is_ok());
  auto img = load_with(small_program(), w.path);
  REQUIRE(img.is_ok());
  const SafetensorsFile* file = (*img)->weights();
  const void* ptr = (*img)->view().buffers[kNormW].ptr;
  CHECK(ptr != file->data(*file->find("model.norm.weight")));
  CHECK(reinterpret_cast<uintptr_t>(ptr) % 64 == 0);
  for (int i = 0; i < kHidden; ++i) CHECK(dtype_load(ir::DType::F32, ptr, i) == ramp(kHidden, 1.0f)[i]);
}

TEST_CASE("bind: a missing tensor is NotFound naming the buffer and source", "[loader]") {
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, tensors_with("proj.weight", TensorBytes{})).is_ok());
  auto img = load_with(small_program(), w.path);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::NotFound);
  CHECK_THAT(img.status().message(), Contains("buffer 3 \"proj\""));
  CHECK_THAT(img.status().message(), Contains("source \"proj.weight\""));
  CHECK_THAT(img.status().message(), Contains("not found"));
}

TEST_CASE("bind: a shape mismatch names both shapes", "[loader]") {
  TempFile w("w.safetensors");
  const TensorBytes wrong{"proj.weight", StDType::F32, {4, 16}, encode(StDType::F32, ramp(64, 0.0f))};
  REQUIRE(safetensors_write(w.path, tensors_with("proj.weight", wrong)).is_ok());
  auto img = load_with(small_program(), w.path);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(img.status().message(), Contains("buffer 3 \"proj\""));
  CHECK_THAT(img.status().message(), Contains("shape mismatch"));
  CHECK_THAT(img.status().message(), Contains("F32 [8, 8]"));
  CHECK_THAT(img.status().message(), Contains("tensor \"proj.weight\" is F32 [4, 16]"));
}

TEST_CASE("bind: a dtype mismatch names both dtypes", "[loader]") {
  TempFile w("w.safetensors");
  const TensorBytes wrong{"model.norm.weight", StDType::BF16, {kHidden}, encode(StDType::BF16, ramp(kHidden, 1.0f))};
  REQUIRE(safetensors_write(w.path, tensors_with("model.norm.weight", wrong)).is_ok());
  auto img = load_with(small_program(), w.path);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(img.status().message(), Contains("buffer 2 \"norm_w\""));
  CHECK_THAT(img.status().message(), Contains("dtype mismatch: the buffer is F32 [8]"));
  CHECK_THAT(img.status().message(), Contains("tensor \"model.norm.weight\" is BF16 [8]"));
}

TEST_CASE("bind: leading 1s are squeezed when comparing shapes", "[loader]") {
  CHECK(shapes_match_squeezed({1, 8}, {8}));
  CHECK(shapes_match_squeezed({8}, {1, 1, 8}));
  CHECK(shapes_match_squeezed({}, {1}));
  CHECK(shapes_match_squeezed({4, 1, 8}, {4, 1, 8}));
  CHECK_FALSE(shapes_match_squeezed({8, 1}, {8}));
  CHECK_FALSE(shapes_match_squeezed({2, 4}, {4, 2}));
  CHECK_FALSE(shapes_match_squeezed({8}, {16}));
  // And end to end: a [1, 8] norm weight in the file binds the [8] buffer.
  TempFile w("w.safetensors");
  const TensorBytes wide{"model.norm.weight", StDType::F32, {1, kHidden}, encode(StDType::F32, ramp(kHidden, 1.0f))};
  REQUIRE(safetensors_write(w.path, tensors_with("model.norm.weight", wide)).is_ok());
  CHECK(load_with(small_program(), w.path).is_ok());
}

TEST_CASE("bind: no weights file and no seed is refused; a corrupt file names the file", "[loader]") {
  auto none = load_with(small_program(), "");
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(none.status().message(), Contains("buffer 1 \"embed\""));
  CHECK_THAT(none.status().message(), Contains("weights_path"));

  TempFile w("w.safetensors");
  { std::FILE* f = std::fopen(w.path.c_str(), "wb"); std::fputs("abc", f); std::fclose(f); }
  auto bad = load_with(small_program(), w.path);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::ParseError);
  CHECK_THAT(bad.status().message(), Contains(w.path));
}

TEST_CASE("bind: seeded random weights are deterministic and shaped like real ones", "[loader]") {
  ir::Program p = small_program();
  // A wide bf16 matrix to check the distribution: normal(0, 1/sqrt(256)).
  p.buffers.push_back(make_buffer(kSmallBufCount, "wide", ir::BufferKind::Weight, ir::DType::BF16, {64, 256}, "wide.weight"));
  LoadOptions o;
  o.random_weights_seed = 42;
  auto a = load_program(p, o);
  auto b = load_program(p, o);
  o.random_weights_seed = 43;
  auto c = load_program(p, o);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  REQUIRE(c.is_ok());
  CHECK((*a)->weights() == nullptr);
  const amk_buffer_t& wa = (*a)->view().buffers[kSmallBufCount];
  const amk_buffer_t& wb = (*b)->view().buffers[kSmallBufCount];
  const amk_buffer_t& wc = (*c)->view().buffers[kSmallBufCount];
  CHECK(std::memcmp(wa.ptr, wb.ptr, 64 * 256 * 2) == 0);
  CHECK(std::memcmp(wa.ptr, wc.ptr, 64 * 256 * 2) != 0);
  double sum = 0.0, sq = 0.0;
  for (int64_t i = 0; i < 64 * 256; ++i) {
    const double x = dtype_load(ir::DType::BF16, wa.ptr, i);
    sum += x;
    sq += x * x;
  }
  const double mean = sum / (64 * 256), std = std::sqrt(sq / (64 * 256) - mean * mean);
  CHECK(mean == Approx(0.0).margin(0.005));
  CHECK(std == Approx(1.0 / 16.0).epsilon(0.05));
  // A buffer big enough to be filled by several threads: deterministic, same distribution.
  ir::Program big = small_program();
  big.buffers.push_back(make_buffer(kSmallBufCount, "big", ir::BufferKind::Weight, ir::DType::F32, {1024, 1024}, "big.weight"));
  o.random_weights_seed = 42;
  auto b1 = load_program(big, o);
  auto b2 = load_program(big, o);
  REQUIRE(b1.is_ok());
  REQUIRE(b2.is_ok());
  const auto* x1 = static_cast<const float*>((*b1)->view().buffers[kSmallBufCount].ptr);
  const auto* x2 = static_cast<const float*>((*b2)->view().buffers[kSmallBufCount].ptr);
  CHECK(std::memcmp(x1, x2, 1024 * 1024 * 4) == 0);
  double bsum = 0.0, bsq = 0.0;
  for (int64_t i = 0; i < 1024 * 1024; ++i) {
    bsum += x1[i];
    bsq += static_cast<double>(x1[i]) * x1[i];
  }
  CHECK(bsum / (1024 * 1024) == Approx(0.0).margin(0.001));
  CHECK(std::sqrt(bsq / (1024 * 1024)) == Approx(1.0 / 32.0).epsilon(0.01));
  // 1-D norm weights: 1 +- 0.1.
  const amk_buffer_t& norm = (*a)->view().buffers[kNormW];
  for (int i = 0; i < kHidden; ++i) {
    const float x = dtype_load(ir::DType::F32, norm.ptr, i);
    CHECK(std::fabs(x - 1.0f) < 0.5f);
    CHECK(x != 1.0f);
  }
}

TEST_CASE("bind: tiny_llama fixture tensors bind by their HF names", "[loader]") {
  using K = ir::BufferKind;
  using D = ir::DType;
  ir::Program p;
  p.buffers = {
      make_buffer(0, "tok", K::IoInput, D::I32, {1}),
      make_buffer(1, "embed", K::Weight, D::BF16, {1024, 256}, "model.embed_tokens.weight"),
      make_buffer(2, "x", K::Activation, D::F32, {1, 256}),
      make_buffer(3, "norm", K::Weight, D::BF16, {256}, "model.norm.weight"),
      make_buffer(4, "k_proj", K::Weight, D::BF16, {64, 256}, "model.layers.2.self_attn.k_proj.weight"),
      make_buffer(5, "h", K::Activation, D::F32, {1, 256}),
      make_buffer(6, "k", K::IoOutput, D::F32, {1, 64}),
  };
  for (int c = 0; c < 3; ++c) p.counters.push_back(ir::Counter{ir::CounterId(c), 0, ""});
  p.tasks = {make_task(0, ir::Opcode::Embed, {0, 1}, {2}, 0, {}, 0, "embed"),
             make_task(1, ir::Opcode::RmsNorm, {2, 3}, {5}, 1, {{0, 1}}, 0, "norm"),
             make_task(2, ir::Opcode::GemvTile, {5, 4}, {6}, 2, {{1, 1}}, 0, "k_proj")};
  p.tasks[0].params.set("hidden", int64_t{256});
  p.tasks[1].params.set("eps", 1e-5);
  p.tasks[1].params.set("hidden", int64_t{256});
  p.tasks[2].params.set("K", int64_t{256});
  p.tasks[2].params.set("N_tile", int64_t{64});
  p.tasks[2].params.set("n_off", int64_t{0});
  auto img = load_with(p, std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/model.safetensors");
  REQUIRE(img.is_ok());
  const SafetensorsFile* file = (*img)->weights();
  CHECK((*img)->view().buffers[1].ptr == file->data(*file->find("model.embed_tokens.weight")));
  CHECK((*img)->view().buffers[4].ptr == file->data(*file->find("model.layers.2.self_attn.k_proj.weight")));
  CHECK((*img)->view().buffers[4].numel == 64 * 256);
}
