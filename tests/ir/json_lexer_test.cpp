// tests/ir/json_lexer_test.cpp: the private tokenizer behind program_from_json_text accepts exactly
// what nlohmann accepts and yields the same values (a differential test on edge cases and on
// thousands of random mutations of a real program), and the reader never throws on any of them.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/json_read_internal.h"

using amk::Result;
using amk::Status;
using namespace amk::ir;
using json_detail::Scalar;

namespace {

// Builds a DOM from the tokenizer's events, to compare with nlohmann::json::parse.
class DomBuilder final : public json_detail::JsonEvents {
 public:
  nlohmann::json root;
  bool non_finite = false;  // nlohmann rejects 1e400 outright; the tokenizer passes it on as inf
  std::string error;

  bool on_scalar(const Scalar& v) override {
    switch (v.kind) {
      case Scalar::Kind::Null: return put(nullptr);
      case Scalar::Kind::Bool: return put(v.b);
      case Scalar::Kind::Int: return put(v.i);
      case Scalar::Kind::Uint: return put(v.u);
      case Scalar::Kind::Float:
        if (!std::isfinite(v.d)) non_finite = true;
        return put(v.d);
      case Scalar::Kind::String: return put(std::string(v.s));
    }
    return false;
  }
  bool on_open(bool is_array, size_t) override {
    if (!put(is_array ? nlohmann::json::array() : nlohmann::json::object())) return false;
    stack_.push_back(last_);
    return true;
  }
  bool on_key(std::string_view k) override {
    key_ = std::string(k);
    return true;
  }
  bool on_close() override {
    stack_.pop_back();
    return true;
  }
  void on_syntax_error(int64_t line, int64_t column, const std::string& what) override {
    error = std::to_string(line) + ":" + std::to_string(column) + " " + what;
  }

 private:
  bool put(nlohmann::json v) {
    if (stack_.empty()) {
      root = std::move(v);
      last_ = &root;
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
      last_ = &stack_.back()->back();
    } else {
      last_ = &((*stack_.back())[key_] = std::move(v));
    }
    return true;
  }
  std::vector<nlohmann::json*> stack_;
  nlohmann::json* last_ = nullptr;
  std::string key_;
};

// Tokenizes `text` and compares with nlohmann; returns whether the tokenizer accepted it.
bool same_as_nlohmann(const std::string& text) {
  DomBuilder dom;
  const bool ours = json_detail::json_tokenize(text, dom);
  const bool theirs = nlohmann::json::accept(text);
  INFO("text: " << text.substr(0, 200) << "\nour error: " << dom.error);
  if (ours && dom.non_finite) {
    CHECK_FALSE(theirs);  // both see the text as JSON; nlohmann alone refuses the overflowing literal
    return ours;
  }
  CHECK(ours == theirs);
  if (ours && theirs) CHECK(dom.root == nlohmann::json::parse(text));
  if (!ours) CHECK_FALSE(dom.error.empty());
  return ours;
}

}  // namespace

TEST_CASE("json tokenizer: agrees with nlohmann on edge cases", "[ir]") {
  const std::vector<std::string> cases = {
      // numbers
      "0", "-0", "1", "-1", "0.5", "-0.0", "1e5", "1E+5", "1e-5", "2.5E-3", "123456789012345678",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "18446744073709551615", "18446744073709551616", "99999999999999999999", "1e400", "-1e400", "1e-400",
      "4.9e-324", "01", "-01", "1.", ".5", "-", "--1", "+1", "1e", "1e+", "0x10", "1.5.2", "1ee5", "Infinity", "NaN",
      // literals
      "true", "false", "null", "tru", "nul", "falsey", "True", "nulll",
      // strings and escapes
      R"("")", R"("abc")", R"("\"\\\/\b\f\n\r\t")", R"("\u0000")", R"("\u00e9\u20AC")", R"("\ud83d\ude00")",
      R"("\ud83d")", R"("\ude00")", R"("\ud83d\u0041")", R"("\u12")", R"("\u12G4")", R"("\x41")", R"("\a")",
      "\"a\tb\"", "\"a\nb\"", "\"\x7f\"", "\"unterminated", "\"\\", "\"\\u",
      // UTF-8
      "\"\xC3\xA9\"", "\"\xE2\x82\xAC\"", "\"\xF0\x9F\x98\x80\"", "\"\xF4\x8F\xBF\xBF\"", "\"\xC0\x80\"",
      "\"\xC1\xBF\"", "\"\xE0\x80\x80\"", "\"\xED\xA0\x80\"", "\"\xF0\x80\x80\x80\"", "\"\xF4\x90\x80\x80\"",
      "\"\xF5\x80\x80\x80\"", "\"\x80\"", "\"\xBF\"", "\"\xE2\x82\"", "\"\xE2\x82", "\"\xFF\"", "\"\xC3\"",
      // structure
      "[]", "{}", "[1,2,3]", "[1,]", "[,1]", "[1 2]", "{\"a\":1}", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{a:1}",
      "{\"a\":1 \"b\":2}", "{1:2}", "[[[]]]", "[[[]]", "[]]", "{\"a\":[{\"b\":null}]}", "{\"a\":1}{", "[] []",
      " \t\r\n[ 1 , { \"k\" : \"v\" } ] \n", "", " ", "\xEF\xBB\xBF[1]", "\xEF\xBB[1]", "/*c*/[1]",
      "[\"a\",\"b\"", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"dup\":1,\"dup\":2}",
  };
  for (const std::string& text : cases) same_as_nlohmann(text);

  // The one deliberate difference: nlohmann stops at a NUL byte as if the input ended there, so it
  // accepts "[1]\0garbage"; RFC 8259 allows only whitespace after the value.
  const std::string nul("[1]\0x", 5);
  DomBuilder dom;
  CHECK_FALSE(json_detail::json_tokenize(nul, dom));
  CHECK(dom.error == "1:4 unexpected byte 0x00 after the JSON value: expected end of input");
  CHECK(nlohmann::json::accept(nul));
}

TEST_CASE("json tokenizer: reports where it stopped", "[ir]") {
  DomBuilder dom;
  REQUIRE_FALSE(json_detail::json_tokenize("{\n  \"a\": [1,\n  2,,\n]}", dom));
  CHECK(dom.error == "3:5 expected a value, got ','");
  DomBuilder empty;
  REQUIRE_FALSE(json_detail::json_tokenize("", empty));
  CHECK(empty.error == "1:1 empty input: expected a JSON value");
}

TEST_CASE("json tokenizer: random mutations of a program agree with nlohmann and never throw", "[ir]") {
  const std::string base = R"({"ir_version": "0.2.0", "meta": {"m": [1, 2.5e-3, "\u00e9"]},
    "buffers": [{"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F32", "shape": [4], "source": null}],
    "counters": [{"id": 0, "init": 0, "note": "n"}],
    "tasks": [{"id": 0, "op": "NOP", "inputs": [], "outputs": [], "out_counter": 0,
               "waits": [{"counter": 0, "threshold": 1}], "params": {"eps": 1e-06, "K": -3, "r": "s", "b": true},
               "sm": null, "label": "l"}],
    "pages": {"buffer_to_page": {"0": 0}, "pages": [{"id": 0, "space": "SMEM", "nbytes": 16}]},
    "config": {"sm_assignment": {"0": 1}}})";
  REQUIRE(program_from_json_text(base).is_ok());
  const std::string palette = "{}[]:,\"\\0123456789-+.eEtrufalsn \n\t\x80\xC3\xFF\x01";
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      const char c = palette[rng() % palette.size()];
      switch (rng() % 4) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, c); break;
        case 2: text[at] = c; break;
        default: text.resize(at); break;  // truncation
      }
    }
    if (same_as_nlohmann(text)) ++accepted;
    REQUIRE_NOTHROW([&] {
      Result<Program> r = program_from_json_text(text);
      if (r.is_ok()) {
        // Whatever loads must write out and read back to the same bytes.
        const std::string out = program_to_json(*r);
        Result<Program> again = program_from_json_text(out);
        REQUIRE(again.is_ok());
        CHECK(program_to_json(*again) == out);
      } else {
        CHECK_FALSE(r.status().message().empty());
      }
    }());
  }
  CHECK(accepted > 100);  // the mutations must exercise both outcomes
  CHECK(accepted < 2900);
}
