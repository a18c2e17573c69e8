// tests/ir/json_text_edit.h: what the IR's JSON-extension tests (stack_json_test.cpp,
// rope_pairs_json_test.cpp) share: a program's text with one value swapped for raw JSON text (so a
// test can write values nlohmann would not, such as 1.5 where an integer belongs), a parse that
// must not throw, and the check of a reader error's exact message.
#pragma once
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/json.h"

namespace amk::testing {

/// The text of `program` with the value at JSON pointer `ptr` replaced by the raw JSON text `raw`.
inline std::string with_raw_value(nlohmann::ordered_json program, const std::string& ptr, const std::string& raw) {
  program[nlohmann::ordered_json::json_pointer(ptr)] = "@@RAW@@";
  std::string text = program.dump();
  text.replace(text.find("\"@@RAW@@\""), 9, raw);
  return text;
}

/// program_from_json_text(text), which must not throw whatever the text.
inline Result<ir::Program> parse_program_text(const std::string& text) {
  std::optional<Result<ir::Program>> r;
  REQUIRE_NOTHROW(r.emplace(ir::program_from_json_text(text)));
  return std::move(*r);
}

/// The reader refuses `text` as InvalidArgument with exactly `message`.
inline void check_parse_error(const std::string& text, const std::string& message) {
  Result<ir::Program> r = parse_program_text(text);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == message);
  CHECK(r.status().code() == StatusCode::InvalidArgument);
}

}  // namespace amk::testing
