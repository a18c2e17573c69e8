// tests/vm/session_golden_test.cpp: the bundled tiny Llama on the CPU VM reproduces Hugging Face
// transformers (fixture made on the device machine by tests/fixtures/make_golden.py): prompt
// logits within 1e-4 relative error (fp32 activations) and the 32 greedy tokens exactly.
#include <catch2/catch.hpp>

#include "golden_session.h"
#include "vm/session.h"

using namespace amk;

namespace {

std::unique_ptr<Session> open_example(int threads) {
  SessionOptions o;
  o.weights_path = testing::fixture_dir() + "model.safetensors";
  o.backend = Backend::Cpu;
  o.threads = threads;
  auto s = Session::open(std::string(AMK_SOURCE_DIR) + "/examples/tiny_llama/program.json", o);
  INFO(s.status().message());
  REQUIRE(s.is_ok());
  return std::move(*s);
}

}  // namespace

TEST_CASE("session: tiny llama matches transformers logits (fp32) and 32 greedy tokens", "[vm][golden]") {
  const testing::Golden g = testing::load_golden();
  REQUIRE(g.logits_f32.size() == g.prompt.size() * static_cast<size_t>(g.vocab));
  auto session = open_example(2);
  REQUIRE(session->vocab_size() == g.vocab);
  CHECK(session->bit_reproducible());  // no ACCUMULATE task
  const int32_t next = testing::check_prompt(*session, g, g.logits_f32, 1e-4);
  CHECK(testing::continue_greedy(*session, next, g.tokens_f32.size()) == g.tokens_f32);
}

TEST_CASE("session: generate, reset and worker count give the same tokens", "[vm][golden]") {
  const testing::Golden g = testing::load_golden();
  auto one = open_example(1);
  auto ids = one->generate(g.prompt, 12);
  REQUIRE(ids.is_ok());
  CHECK(*ids == std::vector<int32_t>(g.tokens_f32.begin(), g.tokens_f32.begin() + 12));
  REQUIRE(one->reset().is_ok());
  CHECK(one->position() == 0);
  auto again = one->generate(g.prompt, 12);
  REQUIRE(again.is_ok());
  CHECK(*again == *ids);
  auto three = open_example(3);
  auto ids3 = three->generate(g.prompt, 12);
  REQUIRE(ids3.is_ok());
  CHECK(*ids3 == *ids);
}

TEST_CASE("session: bad input gets clear errors and leaves the session usable", "[vm]") {
  auto s = open_example(2);
  auto r = s->step(s->vocab_size());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("token id 1024 is outside the vocabulary [0, 1024)"));
  CHECK_FALSE(s->step(-1).is_ok());
  auto neg = s->generate({1, 2}, -1);
  REQUIRE_FALSE(neg.is_ok());
  CHECK_THAT(neg.status().message(), Catch::Contains("max_new_tokens must be >= 0"));
  CHECK_FALSE(s->generate({}, 3).is_ok());
  CHECK(s->position() == 0);
  CHECK(s->step(1).is_ok());
  CHECK(s->position() == 1);
}

TEST_CASE("session: stepping past the KV cache is refused before launching", "[vm]") {
  auto s = open_example(2);
  const int32_t max_seq = s->max_positions();
  REQUIRE(max_seq == 256);
  for (int32_t i = 0; i < max_seq; ++i) REQUIRE(s->step(1).is_ok());
  auto r = s->step(1);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("past the KV cache (max_seq 256)"));
}

TEST_CASE("session: missing weights file and wrong backend are reported by name", "[vm]") {
  SessionOptions o;
  o.weights_path = "/nonexistent/model.safetensors";
  o.backend = Backend::Cpu;
  auto s = Session::open(std::string(AMK_SOURCE_DIR) + "/examples/tiny_llama/program.json", o);
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.status().message(), Catch::Contains("/nonexistent/model.safetensors"));
  std::string why;
  if (!backend_available(Backend::Hip, &why)) {
    o.weights_path = testing::fixture_dir() + "model.safetensors";
    o.backend = Backend::Hip;
    auto h = Session::open(std::string(AMK_SOURCE_DIR) + "/examples/tiny_llama/program.json", o);
    REQUIRE_FALSE(h.is_ok());
    CHECK(h.status().code() == StatusCode::Unsupported);
  }
}
