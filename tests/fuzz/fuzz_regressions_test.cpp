// tests/fuzz/fuzz_regressions_test.cpp: every input a fuzz campaign found (tests/fuzz/regressions/,
// named <target>-<what>.<ext>) replayed through the same entry point as its libFuzzer target
// (fuzz_entry_points.h), in the normal test suite: the ASan build catches a memory error again, and
// every build checks the property the target checks. The seed corpora are replayed too.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "fuzz/fuzz_entry_points.h"

namespace {

namespace fs = std::filesystem;
using EntryPoint = std::string (*)(std::string_view);

const std::map<std::string, EntryPoint>& entry_points() {
  static const std::map<std::string, EntryPoint> m = {{"program_json", amk::fuzz::program_json_one},
                                                      {"validate", amk::fuzz::validate_one},
                                                      {"safetensors_header", amk::fuzz::safetensors_header_one},
                                                      {"model_config", amk::fuzz::model_config_one}};
  return m;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("fuzz regressions: every committed finding passes its target's checks", "[fuzz]") {
  const fs::path dir = fs::path(AMK_SOURCE_DIR) / "tests/fuzz/regressions";
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string target = name.substr(0, name.find('-'));
    INFO(name);
    REQUIRE(entry_points().count(target) == 1);  // a misnamed file would otherwise be skipped
    CHECK(entry_points().at(target)(read_bytes(entry.path())) == "");
    ++replayed;
  }
  CHECK(replayed >= 1);
}

TEST_CASE("fuzz regressions: the seed corpora pass their targets' checks", "[fuzz]") {
  for (const auto& [target, run] : entry_points()) {
    int replayed = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(AMK_SOURCE_DIR) / "tests/fuzz/corpus" / target)) {
      INFO(entry.path());
      CHECK(run(read_bytes(entry.path())) == "");
      ++replayed;
    }
    INFO(target);
    CHECK(replayed >= 3);
  }
}

TEST_CASE("fuzz regression: spaces running to the end of a program's text are a clean parse error", "[fuzz][ir]") {
  // Eight-space indentation steps ended exactly at the end of the text and the lexer read one byte
  // past it (ASan: heap-buffer-overflow in Tokenizer::skip_ws).
  const std::string text = read_bytes(fs::path(AMK_SOURCE_DIR) / "tests/fuzz/regressions/validate-ws_at_end.json");
  REQUIRE(text.size() >= 8);
  REQUIRE(text.substr(text.size() - 8) == "        ");
  auto program = amk::ir::program_from_json_text(text);
  REQUIRE_FALSE(program.is_ok());
  CHECK(program.status().code() == amk::StatusCode::ParseError);
  // The exact end: a text that is only a run of spaces.
  CHECK_FALSE(amk::ir::program_from_json_text(std::string(16, ' ')).is_ok());
}
