// tests/loader/lowered_tiny_llama_test.cpp: the loader against the real pipeline: tiny_llama's HF
// config lowered by schedule/, validated, and bound to the committed bf16 safetensors fixture.
// Every weight binds zero-copy by its HF name, rope_inv_freq is synthesized, the decode section
// resolves, and the queues complete for several worker counts.
#include <catch2/catch.hpp>

#include <cmath>

#include "loader/dtype_cast.h"
#include "loader_test_util.h"
#include "schedule/lower.h"
#include "schedule/model_config.h"
#include "targets/registry.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

const std::string kFixture = std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/";

Result<ir::Program> lower_tiny_llama(ir::DType dtype, std::optional<ir::DType> weight_dtype = std::nullopt) {
  auto model = schedule::model_config_load(kFixture + "config.json");
  if (!model) return model.status();
  auto target = targets::target_find("h100");
  if (!target) return target.status();
  schedule::LowerOptions lo;
  lo.max_seq = 64;
  lo.dtype = dtype;
  lo.weight_dtype = weight_dtype;
  return schedule::lower(*model, ir::ScheduleConfig{}, *target, lo);
}

}  // namespace

TEST_CASE("lowered tiny_llama: loads with the fixture weights through validation", "[loader]") {
  auto program = lower_tiny_llama(ir::DType::BF16);
  REQUIRE(program.is_ok());
  LoadOptions o;
  o.weights_path = kFixture + "model.safetensors";
  auto img = load_program(*program, o);
  INFO(img.status().message());
  REQUIRE(img.is_ok());
  const ProgramImage& im = **img;
  const SafetensorsFile* file = im.weights();
  REQUIRE(file != nullptr);

  int weights = 0;
  for (const ir::Buffer& b : program->buffers) {
    if (b.kind != ir::BufferKind::Weight) continue;
    INFO(b.name << " <- " << b.source.value_or("?"));
    const TensorInfo* t = file->find(b.source.value_or(""));
    REQUIRE(t != nullptr);
    CHECK(im.view().buffers[b.id.value].ptr == file->data(*t));  // zero-copy
    ++weights;
  }
  CHECK(weights == static_cast<int>(file->tensors().size()));  // every tensor is used once

  const int32_t inv = im.buffer_index("rope_inv_freq");
  REQUIRE(inv >= 0);
  REQUIRE(im.view().buffers[inv].numel == 16);
  for (int i = 0; i < 16; ++i)
    CHECK(dtype_load(ir::DType::F32, im.view().buffers[inv].ptr, i) == Approx(std::pow(10000.0, -2.0 * i / 32)));

  const DecodeBindings& d = im.decode();
  CHECK(d.token_input >= 0);
  CHECK(d.logits >= 0);
  CHECK(d.next_token >= 0);
  CHECK(d.vocab == 1024);
  CHECK(d.max_seq == 64);
  CHECK(run_queues(im.view()) == im.view().n_instructions);

  for (int w : {1, 3, 200}) {
    INFO("workers = " << w);
    LoadOptions ow = o;
    ow.workers = w;
    auto again = load_program(*program, ow);
    REQUIRE(again.is_ok());
    CHECK((*again)->workers() == w);
    CHECK(run_queues((*again)->view()) == (*again)->view().n_instructions);
  }
}

TEST_CASE("lowered tiny_llama: F32 weights do not bind the BF16 file; F32 compute over BF16 weights does",
          "[loader]") {
  auto program = lower_tiny_llama(ir::DType::F32);
  REQUIRE(program.is_ok());
  LoadOptions o;
  o.weights_path = kFixture + "model.safetensors";
  auto img = load_program(*program, o);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(img.status().message(), Contains("dtype mismatch: the buffer is F32"));
  CHECK_THAT(img.status().message(), Contains("is BF16"));
  // Random weights need no file.
  LoadOptions seeded;
  seeded.random_weights_seed = 5;
  CHECK(load_program(*program, seeded).is_ok());
  // F32 activations with the checkpoint's BF16 weights bind zero-copy.
  auto mixed = lower_tiny_llama(ir::DType::F32, ir::DType::BF16);
  REQUIRE(mixed.is_ok());
  auto ok = load_program(*mixed, o);
  INFO(ok.status().message());
  CHECK(ok.is_ok());
}
