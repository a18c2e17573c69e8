// tests/loader/load_program_test.cpp: the pipeline end to end: refusal of rejected programs (and the
// test hook), allocation (pages shared, sizes checked, alignment, zeroing), the decode section,
// clear_state(), structural checks under the hook, and 1000 load/destroy cycles (run under ASan to
// prove nothing leaks).
#include <catch2/catch.hpp>

#include <cstring>

#include "loader/decode_bindings.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

LoadOptions seeded() {
  LoadOptions o;
  o.random_weights_seed = 9;
  return o;
}

bool all_zero(const void* p, int64_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (int64_t i = 0; i < bytes; ++i)
    if (b[i] != 0) return false;
  return true;
}

}  // namespace

TEST_CASE("load: a program validate() rejects is refused with ValidationFailed", "[loader]") {
  ir::Program p = small_program();
  p.tasks[4].waits[0].threshold = 2;  // rmsnorm waits for 2 signals of a counter only embed signals
  auto img = load_program(p, seeded());
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::ValidationFailed);
  CHECK_THAT(img.status().message(), Contains("rejected by validate()"));
  CHECK_THAT(img.status().message(), Contains("task 4"));

  SECTION("the test hook loads it anyway; the stuck tasks are still queued") {
    LoadOptions o = seeded();
    o.unsafe_skip_validation_for_tests = true;
    auto stuck = load_program(p, o);
    REQUIRE(stuck.is_ok());
    const amk_program_t& v = (*stuck)->view();
    CHECK(v.sm_queue_offsets[v.n_sms] == 7);
    CHECK(run_queues(v) == 1);  // embed; everything after rmsnorm waits forever
  }
}

TEST_CASE("load: structural errors are refused even under the test hook", "[loader]") {
  LoadOptions o = seeded();
  o.unsafe_skip_validation_for_tests = true;
  auto expect = [&](const ir::Program& p, const std::string& what) {
    auto img = load_program(p, o);
    REQUIRE_FALSE(img.is_ok());
    CHECK(img.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(img.status().message(), Contains(what));
  };
  ir::Program p = small_program();
  SECTION("dangling buffer") {
    p.tasks[2].inputs[0] = ir::BufferId(99);
    expect(p, "task 2 (argmax): input 0 names buffer 99, which does not exist");
  }
  SECTION("dangling counter") {
    p.tasks[1].waits[0].counter = ir::CounterId(17);
    expect(p, "task 1 (lm_a): waits on counter 17");
  }
  SECTION("duplicate ids") {
    p.buffers[3].id = ir::BufferId(2);
    expect(p, "buffer id 2 appears twice");
  }
  SECTION("negative sm") {
    p.tasks[0].sm = -1;
    expect(p, "task 0 (proj_b): sm -1 is negative");
  }
  SECTION("rank above 4") {
    p.buffers[kX].shape = {1, 1, 1, 1, 8};
    expect(p, "buffer 5 \"x\": rank 5 exceeds 4");
  }
}

TEST_CASE("load: buffers on one page share its pointer; others get their own 64-byte aligned memory",
          "[loader]") {
  auto img = load_program(small_program(), seeded());
  REQUIRE(img.is_ok());
  const amk_program_t& v = (*img)->view();
  CHECK(v.buffers[kX].ptr == v.buffers[kY].ptr);
  CHECK(v.buffers[kH].ptr != v.buffers[kX].ptr);
  for (int b = 0; b < v.n_buffers; ++b) {
    INFO("buffer " << b);
    REQUIRE(v.buffers[b].ptr != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(v.buffers[b].ptr) % 64 == 0);
  }
  for (int b : {kTok, kX, kH, kLogits, kNext}) CHECK(all_zero(v.buffers[b].ptr, (*img)->buffer_bytes(b)));

  auto unpaged = load_program(small_program(/*paged=*/false), seeded());
  REQUIRE(unpaged.is_ok());
  CHECK((*unpaged)->view().buffers[kX].ptr != (*unpaged)->view().buffers[kY].ptr);
}

TEST_CASE("load: a buffer larger than its page is rejected", "[loader]") {
  ir::Program p = small_program();
  p.pages->pages[1].nbytes = 16;  // h needs 32 bytes
  auto img = load_program(p, seeded());
  REQUIRE_FALSE(img.is_ok());  // validate() rejects it (page.size) before the loader gets to it

  LoadOptions o = seeded();
  o.unsafe_skip_validation_for_tests = true;
  auto direct = load_program(p, o);
  REQUIRE_FALSE(direct.is_ok());
  CHECK(direct.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(direct.status().message(), Contains("buffer 6 \"h\" on page 1: the buffer needs 32 bytes, the page holds 16"));

  SECTION("only activations may be paged") {
    p.pages->pages[1].nbytes = 64;
    p.pages->buffer_to_page.push_back({ir::BufferId(kLogits), ir::PageId(1)});
    auto kv = load_program(p, o);
    REQUIRE_FALSE(kv.is_ok());
    CHECK_THAT(kv.status().message(), Contains("buffer 8 \"logits\" on page 1: only ACTIVATION buffers"));
  }
}

TEST_CASE("load: clear_state zeroes state but leaves weights alone", "[loader]") {
  auto img = load_program(small_program(), seeded());
  REQUIRE(img.is_ok());
  ProgramImage& im = **img;
  amk_program_t& v = im.view();
  std::vector<uint8_t> norm_before(static_cast<size_t>(im.buffer_bytes(kNormW)));
  std::memcpy(norm_before.data(), v.buffers[kNormW].ptr, norm_before.size());
  for (int b : {kTok, kX, kH, kLogits, kNext}) std::memset(v.buffers[b].ptr, 0x5a, static_cast<size_t>(im.buffer_bytes(b)));
  v.counters[2] = 7;
  v.error->code = AMK_DEVERR_BAD_PARAMS;
  *v.abort_flag = 1;
  v.step->pos = 12;
  v.step->epoch = 5;
  im.clear_state();
  for (int b : {kTok, kX, kH, kLogits, kNext}) CHECK(all_zero(v.buffers[b].ptr, im.buffer_bytes(b)));
  CHECK(v.counters[2] == 0u);
  CHECK(v.error->code == 0);
  CHECK(*v.abort_flag == 0);
  CHECK(v.step->pos == 0);
  CHECK(v.step->epoch == 1u);
  CHECK(std::memcmp(norm_before.data(), v.buffers[kNormW].ptr, norm_before.size()) == 0);
}

TEST_CASE("load: KV caches and IO buffers get their own zeroed memory", "[loader]") {
  ir::Program p = small_program();
  // A KV cache that nothing touches this pass (read-only prior state is allowed).
  p.buffers.push_back(make_buffer(kSmallBufCount, "k_cache", ir::BufferKind::KvCache, ir::DType::BF16, {32, 16}));
  p.buffers.back().space = ir::MemSpace::Hbm;
  p.decode["max_seq"] = 32;
  auto img = load_program(p, seeded());
  REQUIRE(img.is_ok());
  const amk_buffer_t& kv = (*img)->view().buffers[kSmallBufCount];
  CHECK(kv.numel == 512);
  CHECK(all_zero(kv.ptr, 1024));
  CHECK((*img)->decode().max_seq == 32);
}

TEST_CASE("decode: the decode section resolves to buffer indices", "[loader]") {
  auto img = load_program(small_program(), seeded());
  REQUIRE(img.is_ok());
  const DecodeBindings& d = (*img)->decode();
  CHECK(d.token_input == kTok);
  CHECK(d.logits == kLogits);
  CHECK(d.next_token == kNext);
  CHECK(d.vocab == kVocab);
  CHECK(d.max_seq == 0);

  ir::Program none = small_program();
  none.decode = nullptr;
  auto empty = decode_bindings(none);
  REQUIRE(empty.is_ok());
  CHECK(empty->token_input == -1);
  CHECK(empty->logits == -1);
}

TEST_CASE("decode: each bad field is named", "[loader]") {
  auto expect = [](const nlohmann::ordered_json& decode, const std::string& what) {
    ir::Program p = small_program();
    p.decode = decode;
    auto d = decode_bindings(p);
    INFO(decode.dump());
    REQUIRE_FALSE(d.is_ok());
    CHECK(d.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(d.status().message(), Contains(what));
  };
  expect(nlohmann::ordered_json::array(), "decode: expected an object");
  expect({{"token_input", kX}}, "decode.token_input: buffer 5 \"x\" is ACTIVATION F32 [1, 8]; expected an IO_INPUT I32");
  expect({{"token_input", 1.5}}, "decode.token_input: expected a non-negative int32");
  expect({{"token_input", -3}}, "decode.token_input: expected a non-negative int32");
  expect({{"token_input", 99}}, "decode.token_input: buffer 99 does not exist");
  expect({{"next_token", kLogits}}, "decode.next_token: buffer 8 \"logits\"");
  expect({{"logits", kNext}}, "decode.logits: buffer 9 \"next\" is IO_OUTPUT I32");
  expect({{"logits", kLogits}, {"vocab", 1000}}, "decode.logits: buffer 8 \"logits\" is IO_OUTPUT F32 [1, 16] (16 elements), but decode.vocab is 1000");
  expect({{"max_seq", "long"}}, "decode.max_seq: expected a non-negative int32");
  ir::Program p = small_program();
  p.buffers.push_back(make_buffer(kSmallBufCount, "k_cache", ir::BufferKind::KvCache, ir::DType::BF16, {32, 16}));
  p.decode["max_seq"] = 64;
  auto d = decode_bindings(p);
  REQUIRE_FALSE(d.is_ok());
  CHECK_THAT(d.status().message(), Contains("decode.max_seq: 64 exceeds the rows of KV cache buffer 10 \"k_cache\""));
}

TEST_CASE("load: loading and destroying 1000 images leaks nothing", "[loader]") {
  // Run under AddressSanitizer (build-loader-asan) for the leak check; here it must simply work.
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, small_tensors()).is_ok());
  const ir::Program p = small_program();
  LoadOptions o;
  o.weights_path = w.path;
  for (int i = 0; i < 1000; ++i) {
    auto img = load_program(p, o);
    REQUIRE(img.is_ok());
    (*img)->clear_state();
  }
  LoadOptions r = seeded();
  for (int i = 0; i < 1000; ++i) {
    auto img = load_program(p, r);
    REQUIRE(img.is_ok());
  }
}
