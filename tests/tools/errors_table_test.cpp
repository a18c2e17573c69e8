// tests/tools/errors_table_test.cpp: docs/ERRORS.md is the test. Every row of its table names a tool,
// its arguments (inputs under tests/fixtures/errors/, made by make_errors.py), the exit code and the
// text the tool must print; this test runs each row and checks both, so the document cannot drift
// from the behaviour. A failing run must also leave no output file behind ($T is a fresh, empty
// folder per row, and must still be empty afterwards).
#include <catch2/catch.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/tool_runner.h"

namespace {

namespace fs = std::filesystem;

struct ErrorRow {
  int number = 0;
  std::string tool, args, message;
  int exit_code = -1;
};

/// The text between the first pair of backticks in `cell`, or the trimmed cell.
std::string code_span(const std::string& cell) {
  const size_t a = cell.find('`');
  const size_t b = a == std::string::npos ? a : cell.find('`', a + 1);
  if (b != std::string::npos) return cell.substr(a + 1, b - a - 1);
  const size_t first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
  return first == std::string::npos ? "" : cell.substr(first, last - first + 1);
}

/// Rows of the table in docs/ERRORS.md: lines "| N | what | tool | `args` | exit | `message` |".
std::vector<ErrorRow> read_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<ErrorRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(cell);
    if (cells.size() < 6 || code_span(cells[0]).empty() || !std::isdigit(static_cast<unsigned char>(code_span(cells[0])[0])))
      continue;  // the header and separator rows
    ErrorRow r;
    r.number = std::stoi(code_span(cells[0]));
    r.tool = code_span(cells[2]);
    r.args = code_span(cells[3]);
    r.exit_code = std::stoi(code_span(cells[4]));
    r.message = code_span(cells[5]);
    rows.push_back(r);
  }
  return rows;
}

/// Splits on spaces and shell-quotes each word after replacing $E (the fixtures folder) and $T (the
/// per-row scratch folder). Arguments in the table never contain spaces.
std::string shell_args(const std::string& args, const std::string& scratch) {
  std::stringstream ss(args);
  std::string out;
  for (std::string word; ss >> word;) {
    for (auto [key, value] : {std::pair<std::string, std::string>{"$E", "tests/fixtures/errors"}, {"$T", scratch}})
      for (size_t at; (at = word.find(key)) != std::string::npos;) word.replace(at, key.size(), value);
    out += (out.empty() ? "" : " ") + amk::test::shell_quote(word);
  }
  return out;
}

/// Runs the test body from the source tree (the table's paths are relative to it), then returns.
struct InSourceDir {
  fs::path old = fs::current_path();
  InSourceDir() { fs::current_path(AMK_SOURCE_DIR); }
  ~InSourceDir() { fs::current_path(old); }
};

}  // namespace

TEST_CASE("docs/ERRORS.md: every bad input gets its documented exit code and message", "[tools]") {
  const std::vector<ErrorRow> rows = read_rows(std::string(AMK_SOURCE_DIR) + "/docs/ERRORS.md");
  REQUIRE(rows.size() >= 30);
  const std::map<std::string, std::string> binaries = {
      {"amk-validate", AMK_VALIDATE_BIN}, {"amk-run", AMK_RUN_BIN}, {"amk-compile", AMK_COMPILE_BIN}};
  std::map<std::string, int> per_tool;
  InSourceDir in_source;
  const fs::path scratch = fs::path(AMK_BINARY_DIR) / ("errors_table_" + std::to_string(::getpid()));
  for (const ErrorRow& row : rows) {
    INFO("docs/ERRORS.md row " << row.number << ": " << row.tool << " " << row.args);
    REQUIRE(binaries.count(row.tool) == 1);  // a typo in the tool column must not skip the row
    fs::remove_all(scratch);
    fs::create_directories(scratch);
    const amk::test::ToolRun run = amk::test::run_tool(binaries.at(row.tool), shell_args(row.args, scratch.string()));
    INFO("exit " << run.exit_code << "\nstdout:\n" << run.out << "\nstderr:\n" << run.err);
    CHECK(run.exit_code == row.exit_code);
    CHECK_THAT(run.out + run.err, Catch::Contains(row.message));
    if (row.exit_code != 0) CHECK(fs::is_empty(scratch));  // nothing half-written
    ++per_tool[row.tool];
  }
  fs::remove_all(scratch);
  for (const auto& [tool, binary] : binaries) {
    INFO(tool);
    CHECK(per_tool[tool] >= 5);
  }
}
