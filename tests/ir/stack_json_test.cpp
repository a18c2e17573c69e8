// tests/ir/stack_json_test.cpp: stacked weight sources (docs/FOLD.md) in the IR: the "stack" field's
// JSON round trip, every reader error with its exact message, and validate()'s `source.stack` rule.
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

// Buffer 1 is the fold's w_mlp: gate, up and down^T of a [4, 8] layer.
ojson stacked_program() {
  return ojson::parse(R"({
    "ir_version": "0.2.0", "abi_version": "0.2",
    "buffers": [
      {"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F32", "shape": [8]},
      {"id": 1, "name": "w_mlp", "kind": "WEIGHT", "dtype": "BF16", "shape": [4, 3, 8],
       "stack": [{"source": "gate.weight"}, {"source": "up.weight", "transpose": false},
                 {"source": "down.weight", "transpose": true}]}],
    "counters": [],
    "tasks": []
  })");
}

// stacked_program() with the value at JSON pointer `ptr` replaced by the raw JSON text `raw`.
std::string with_value(const std::string& ptr, const std::string& raw) {
  return amk::testing::with_raw_value(stacked_program(), ptr, raw);
}

}  // namespace

TEST_CASE("stack json: parts read in order, transpose defaults to false, and the text round-trips", "[ir]") {
  Result<Program> r = parse_program_text(stacked_program().dump());
  REQUIRE(r.is_ok());
  const Buffer& w = r->buffers[1];
  CHECK_FALSE(w.source.has_value());
  REQUIRE(w.stack.size() == 3);
  CHECK(w.stack[0] == StackPart{"gate.weight", false});
  CHECK(w.stack[1] == StackPart{"up.weight", false});
  CHECK(w.stack[2] == StackPart{"down.weight", true});
  CHECK(r->buffers[0].stack.empty());

  const std::string text = program_to_json(*r);
  const ojson written = ojson::parse(text);
  CHECK(written["buffers"][1]["source"].is_null());
  CHECK(written["buffers"][1]["stack"][2] == ojson::parse(R"({"source": "down.weight", "transpose": true})"));
  CHECK(written["buffers"][1]["stack"][0]["transpose"] == false);  // written out even when false
  CHECK_FALSE(written["buffers"][0].contains("stack"));           // unstacked buffers keep their old text
  Result<Program> again = parse_program_text(text);
  REQUIRE(again.is_ok());
  CHECK(again->buffers[1].stack == w.stack);
  CHECK(program_to_json(*again) == text);
}

TEST_CASE("stack json: a program without stacks writes no stack key", "[ir]") {
  ProgramBuilder b;
  b.weight("w", {4, 8});
  b.input("x", {8});
  const std::string text = program_to_json(b.build());
  CHECK(text.find("\"stack\"") == std::string::npos);
  CHECK(text.find("\"source\": \"w\"") != std::string::npos);
}

TEST_CASE("stack json: wrong types in a part name the part", "[ir]") {
  check_parse_error(with_value("/buffers/1/stack/1/transpose", "1"), "buffers[1].stack[1].transpose: expected a bool, got 1");
  check_parse_error(with_value("/buffers/1/stack/1/transpose", "\"yes\""),
              "buffers[1].stack[1].transpose: expected a bool, got \"yes\"");
  check_parse_error(with_value("/buffers/1/stack/1/transpose", "[]"),
              "buffers[1].stack[1].transpose: expected a bool, got an array");
  check_parse_error(with_value("/buffers/1/stack/0/source", "3"), "buffers[1].stack[0].source: expected a string, got 3");
  check_parse_error(with_value("/buffers/1/stack/0/source", "null"), "buffers[1].stack[0].source: expected a string, got null");
  check_parse_error(with_value("/buffers/1/stack/2/source", "{}"),
              "buffers[1].stack[2].source: expected a string, got an object");
}

TEST_CASE("stack json: a part needs its source and takes no other key", "[ir]") {
  check_parse_error(with_value("/buffers/1/stack/1", R"({"transpose": true})"),
              "buffers[1].stack[1]: missing required key \"source\"");
  check_parse_error(with_value("/buffers/1/stack/2", R"({"source": "d", "transposed": true})"),
              "buffers[1].stack[2].transposed: unknown key (a stack part has \"source\" and \"transpose\")");
  check_parse_error(with_value("/buffers/1/stack/0", R"({"source": "a", "source": "b"})"),
              "buffers[1].stack[0].source: duplicate key");
}

TEST_CASE("stack json: the stack must be a non-empty array of part objects", "[ir]") {
  const std::string want = "a non-empty array of {\"source\", \"transpose\"} objects";
  check_parse_error(with_value("/buffers/1/stack", "[]"), "buffers[1].stack: expected " + want + ", got an empty array");
  check_parse_error(with_value("/buffers/1/stack", "{}"), "buffers[1].stack: expected " + want + ", got an object");
  check_parse_error(with_value("/buffers/1/stack", "\"gate.weight\""),
              "buffers[1].stack: expected " + want + ", got \"gate.weight\"");
  check_parse_error(with_value("/buffers/1/stack", "null"), "buffers[1].stack: expected " + want + ", got null");
  check_parse_error(with_value("/buffers/1/stack/1", "\"up.weight\""),
              "buffers[1].stack[1]: expected a {\"source\", \"transpose\"} object, got \"up.weight\"");
  check_parse_error(with_value("/buffers/1/stack/0", "[\"gate.weight\"]"),
              "buffers[1].stack[0]: expected a {\"source\", \"transpose\"} object, got an array");
}

TEST_CASE("stack json: source and stack together, and a stack on a non-weight buffer, are refused", "[ir]") {
  const std::string both =
      "buffers[1]: \"source\" and \"stack\" are both set; a stacked buffer takes its tensors from \"stack\" alone "
      "(\"source\": null)";
  // The keys may come in either order: the check waits for the whole buffer object.
  check_parse_error(with_value("/buffers/1/source", "\"w.weight\""), both);
  ojson j = stacked_program();
  ojson first = ojson::object();
  first["source"] = "w.weight";
  const ojson& stacked = j["buffers"][1];
  for (auto it = stacked.begin(); it != stacked.end(); ++it) first[it.key()] = it.value();
  j["buffers"][1] = first;
  check_parse_error(j.dump(), both);
  // "source": null next to a stack is how the writer spells it, so it reads back.
  CHECK(parse_program_text(with_value("/buffers/1/source", "null")).is_ok());

  check_parse_error(with_value("/buffers/1/kind", "\"ACTIVATION\""),
              "buffers[1].stack: only a WEIGHT or CONST buffer may be stacked, this one is ACTIVATION");
  CHECK(parse_program_text(with_value("/buffers/1/kind", "\"CONST\"")).is_ok());
}

TEST_CASE("json read: a buffer field given an array is a type error, not a shape", "[ir]") {
  // Before stacks, any array-valued buffer field was read as the shape.
  check_parse_error(with_value("/buffers/0/name", "[3]"), "buffers[0].name: expected a string, got an array");
  check_parse_error(with_value("/buffers/0/source", "[]"), "buffers[0].source: expected a string or null, got an array");
}

namespace {

// A valid program holding one stacked WEIGHT buffer (unread: weights need no reader).
struct Stacked {
  ProgramBuilder b;
  int w;
  Stacked() {
    const int x = b.input("x", {1, 8});
    const int y = b.output("y", {1, 8});
    b.copy("copy", x, y);
    w = b.buffer("w_mlp", BufferKind::Weight, {4, 3, 8}, DType::BF16);
    Buffer& buf = b.program().buffers[static_cast<size_t>(w)];
    buf.source.reset();
    buf.stack = {{"gate.weight", false}, {"up.weight", false}, {"down.weight", true}};
  }
  Buffer& buf() { return b.program().buffers[static_cast<size_t>(w)]; }
};

}  // namespace

TEST_CASE("validate: a well-formed stacked buffer is accepted", "[ir]") {
  Stacked s;
  const ValidationResult r = validate(s.b.build());
  CHECK(count_rule(r, "source.stack") == 0);
  CHECK(r.ok);
}

TEST_CASE("validate: source.stack rejects a stack that does not fit its buffer", "[ir]") {
  auto message_of = [](Stacked& s) {
    const ValidationResult r = validate(s.b.build());
    CHECK_FALSE(r.ok);
    const Diagnostic* d = find_rule(r, "source.stack");
    REQUIRE(d != nullptr);
    CHECK(count_rule(r, "source.stack") == 1);
    REQUIRE(d->buffers.size() == 1);
    CHECK(d->buffers[0] == BufferId(s.w));
    return d->message;
  };
  SECTION("rank") {
    Stacked s;
    s.buf().shape = {4, 24};
    CHECK_THAT(message_of(s), Contains("buffer 2 \"w_mlp\": is stacked from 3 parts, so it must be rank 3 [N, 3, K], "
                                       "but its shape is [4, 24]"));
  }
  SECTION("parts axis") {
    Stacked s;
    s.buf().shape = {4, 2, 8};
    CHECK_THAT(message_of(s), Contains("shape [4, 2, 8] has 2 at axis 1, but the stack has 3 parts"));
  }
  SECTION("source and stack") {
    Stacked s;
    s.buf().source = "w.weight";
    CHECK_THAT(message_of(s), Contains("has both a source (\"w.weight\") and a stack of 3 parts"));
  }
  SECTION("kind") {
    Stacked s;
    s.buf().kind = BufferKind::Activation;
    CHECK_THAT(message_of(s), Contains("only a WEIGHT or CONST buffer may be stacked, this one is ACTIVATION"));
  }
  SECTION("empty part source") {
    Stacked s;
    s.buf().stack[1].source.clear();
    CHECK_THAT(message_of(s), Contains("stack[1].source is empty"));
  }
  SECTION("synthesized part") {
    Stacked s;
    s.buf().stack[2].source = "amk:rope_inv_freq?theta=10000&dim=16";
    CHECK_THAT(message_of(s), Contains("stack[2].source \"amk:rope_inv_freq?theta=10000&dim=16\" is synthesized"));
  }
}
