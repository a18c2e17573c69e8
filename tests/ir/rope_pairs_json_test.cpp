// tests/ir/rope_pairs_json_test.cpp: rope-pair row order (docs/JSON.md "rope_pairs") in the IR:
// the key's JSON round trip, the reader's type errors with their exact messages, and validate()'s
// `source.rope_pairs` rule, each bad case rejected once with a message naming the buffer.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/program_builder.h"
#include "ir/validate.h"
#include "ir/json_text_edit.h"

using amk::Result;
using amk::StatusCode;
using amk::testing::check_parse_error;
using amk::testing::count_rule;
using amk::testing::find_rule;
using amk::testing::parse_program_text;
using amk::testing::ProgramBuilder;
using Catch::Contains;
using namespace amk::ir;

namespace {

using ojson = nlohmann::ordered_json;

// Buffer 1 is a q_proj of two heads of head_dim 4 over K = 8.
ojson permuted_program() {
  return ojson::parse(R"({
    "ir_version": "0.2.0", "abi_version": "0.2",
    "buffers": [
      {"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F32", "shape": [8]},
      {"id": 1, "name": "wq", "kind": "WEIGHT", "dtype": "BF16", "shape": [8, 8],
       "source": "q.weight", "rope_pairs": 4}],
    "counters": [],
    "tasks": []
  })");
}

// permuted_program() with the value at JSON pointer `ptr` replaced by the raw JSON text `raw`.
std::string with_value(const std::string& ptr, const std::string& raw) {
  return amk::testing::with_raw_value(permuted_program(), ptr, raw);
}

}  // namespace

TEST_CASE("rope_pairs json: the key is read, written only when nonzero, and round-trips", "[ir]") {
  Result<Program> r = parse_program_text(permuted_program().dump());
  REQUIRE(r.is_ok());
  CHECK(r->buffers[1].rope_pairs == 4);
  CHECK(r->buffers[1].rope_permuted());
  CHECK(r->buffers[1].source == std::optional<std::string>("q.weight"));
  CHECK(r->buffers[0].rope_pairs == 0);

  const std::string text = program_to_json(*r);
  const ojson written = ojson::parse(text);
  CHECK(written["buffers"][1]["rope_pairs"] == 4);
  CHECK_FALSE(written["buffers"][0].contains("rope_pairs"));  // other buffers keep their old text
  Result<Program> again = parse_program_text(text);
  REQUIRE(again.is_ok());
  CHECK(again->buffers[1].rope_pairs == 4);
  CHECK(program_to_json(*again) == text);

  // An explicit 0 reads as "not permuted" and is not written back.
  Result<Program> zero = parse_program_text(with_value("/buffers/1/rope_pairs", "0"));
  REQUIRE(zero.is_ok());
  CHECK_FALSE(zero->buffers[1].rope_permuted());
  CHECK(program_to_json(*zero).find("rope_pairs") == std::string::npos);
}

TEST_CASE("rope_pairs json: a program without the key writes none", "[ir]") {
  ProgramBuilder b;
  b.weight("w", {4, 8});
  b.input("x", {8});
  CHECK(program_to_json(b.build()).find("\"rope_pairs\"") == std::string::npos);
}

TEST_CASE("rope_pairs json: a value that is not an int64 is a type error naming the buffer", "[ir]") {
  const std::string at = "buffers[1].rope_pairs: expected an int64 integer, got ";
  check_parse_error(with_value("/buffers/1/rope_pairs", "4.5"), at + "4.5");
  check_parse_error(with_value("/buffers/1/rope_pairs", "\"64\""), at + "\"64\"");
  check_parse_error(with_value("/buffers/1/rope_pairs", "true"), at + "true");
  check_parse_error(with_value("/buffers/1/rope_pairs", "null"), at + "null");
  check_parse_error(with_value("/buffers/1/rope_pairs", "[64]"), at + "an array");
  check_parse_error(with_value("/buffers/1/rope_pairs", "{}"), at + "an object");
  check_parse_error(with_value("/buffers/1/rope_pairs", "18446744073709551615"), at + "18446744073709551615");
  // A value validate() refuses still reads (the reader checks types only) and round-trips.
  Result<Program> odd = parse_program_text(with_value("/buffers/1/rope_pairs", "-3"));
  REQUIRE(odd.is_ok());
  CHECK(odd->buffers[1].rope_pairs == -3);
  CHECK(parse_program_text(program_to_json(*odd))->buffers[1].rope_pairs == -3);
}

TEST_CASE("rope_pairs json: a repeated key is refused", "[ir]") {
  std::string text = permuted_program().dump();
  const std::string key = "\"rope_pairs\":4";
  REQUIRE(text.find(key) != std::string::npos);
  text.replace(text.find(key), key.size(), key + "," + key);
  check_parse_error(text, "buffers[1].rope_pairs: duplicate key");
}

namespace {

// A valid program holding one permuted WEIGHT buffer: two heads of head_dim 4 over K = 8.
struct Permuted {
  ProgramBuilder b;
  int w;
  Permuted() {
    const int x = b.input("x", {1, 8});
    const int y = b.output("y", {1, 8});
    b.copy("copy", x, y);
    w = b.buffer("wq", BufferKind::Weight, {8, 8}, DType::BF16);
    buf().source = "q.weight";
    buf().rope_pairs = 4;
  }
  Buffer& buf() { return b.program().buffers[static_cast<size_t>(w)]; }
};

}  // namespace

TEST_CASE("validate: a well-formed rope_pairs buffer is accepted", "[ir]") {
  Permuted s;
  SECTION("WEIGHT") {}
  SECTION("CONST") { s.buf().kind = BufferKind::Const; }
  SECTION("one head") {
    s.buf().shape = {4, 8};
  }
  SECTION("head_dim 2") {
    s.buf().rope_pairs = 2;
  }
  const ValidationResult r = validate(s.b.build());
  CHECK(count_rule(r, "source.rope_pairs") == 0);
  CHECK(r.ok);
}

TEST_CASE("validate: source.rope_pairs rejects a permutation that does not fit its buffer", "[ir]") {
  // Exactly one source.rope_pairs error, on the buffer, and its message.
  auto message_of = [](Permuted& s) {
    const ValidationResult r = validate(s.b.build());
    CHECK_FALSE(r.ok);
    const Diagnostic* d = find_rule(r, "source.rope_pairs");
    REQUIRE(d != nullptr);
    CHECK(count_rule(r, "source.rope_pairs") == 1);
    REQUIRE(d->buffers.size() == 1);
    CHECK(d->buffers[0] == BufferId(s.w));
    CHECK_THAT(d->message, Contains("buffer 2 \"wq\": "));
    return d->message;
  };
  Permuted s;
  SECTION("kind") {
    s.buf().kind = BufferKind::Activation;
    s.buf().space = MemSpace::GlobalScratch;
    CHECK_THAT(message_of(s),
               Contains("rope_pairs 4: only a WEIGHT or CONST buffer may be permuted, this one is ACTIVATION"));
  }
  SECTION("stacked") {
    s.buf().source.reset();
    s.buf().shape = {8, 2, 8};
    s.buf().stack = {{"gate.weight", false}, {"up.weight", false}};
    // The stack itself is fine (no source.stack error); the permutation is refused, and so is
    // the stack's rank 3 (every problem is reported).
    const ValidationResult r = validate(s.b.build());
    CHECK(count_rule(r, "source.stack") == 0);
    REQUIRE(count_rule(r, "source.rope_pairs") == 2);
    std::string all;
    for (const Diagnostic& d : r.errors)
      if (d.rule == "source.rope_pairs") all += d.message + "\n";
    CHECK_THAT(all, Contains("buffer 2 \"wq\": rope_pairs 4: a stacked buffer (2 parts) cannot be permuted; only a "
                             "buffer with one source can"));
    CHECK_THAT(all, Contains("buffer 2 \"wq\": rope_pairs 4 permutes rows, so the buffer must be rank 2 [N, K], "
                             "but its shape is [8, 2, 8]"));
  }
  SECTION("no source") {
    s.buf().source.reset();
    CHECK_THAT(message_of(s), Contains("rope_pairs 4: the buffer has no source"));
  }
  SECTION("empty source") {
    s.buf().source = "";
    CHECK_THAT(message_of(s), Contains("rope_pairs 4: the buffer has no source"));
  }
  SECTION("synthesized source") {
    s.buf().source = "amk:rope_inv_freq?theta=10000&dim=16";
    CHECK_THAT(message_of(s), Contains("rope_pairs 4: source \"amk:rope_inv_freq?theta=10000&dim=16\" is "
                                       "synthesized (amk:); only file tensors can be permuted"));
  }
  SECTION("odd") {
    s.buf().rope_pairs = 3;
    CHECK_THAT(message_of(s), Contains("buffer 2 \"wq\": rope_pairs 3 is not a head_dim: it must be even and at least 2"));
  }
  SECTION("negative") {
    s.buf().rope_pairs = -4;
    CHECK_THAT(message_of(s), Contains("rope_pairs -4 is not a head_dim"));
  }
  SECTION("one") {
    s.buf().rope_pairs = 1;
    CHECK_THAT(message_of(s), Contains("rope_pairs 1 is not a head_dim"));
  }
  SECTION("rank 1") {
    s.buf().shape = {64};
    CHECK_THAT(message_of(s), Contains("rope_pairs 4 permutes rows, so the buffer must be rank 2 [N, K], but its "
                                       "shape is [64]"));
  }
  SECTION("rank 3") {
    s.buf().shape = {8, 2, 4};
    CHECK_THAT(message_of(s), Contains("must be rank 2 [N, K], but its shape is [8, 2, 4]"));
  }
  SECTION("partial head") {
    s.buf().shape = {6, 8};
    CHECK_THAT(message_of(s),
               Contains("buffer 2 \"wq\": shape [6, 8] has 6 rows, which is not a whole number of heads of rope_pairs 4"));
  }
}

TEST_CASE("validate: every source.rope_pairs problem of a buffer is reported", "[ir]") {
  // Validation returns all problems (STYLE.md 6): an ACTIVATION without a source of rank 1 and an
  // odd head_dim has four.
  Permuted s;
  s.buf().kind = BufferKind::Activation;
  s.buf().space = MemSpace::GlobalScratch;
  s.buf().source.reset();
  s.buf().shape = {6};
  s.buf().rope_pairs = 5;
  CHECK(count_rule(validate(s.b.build()), "source.rope_pairs") == 4);
}
