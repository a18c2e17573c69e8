// tests/ir/json_examples_test.cpp: the example programs in examples/ load, round-trip byte-stably,
// show what they claim to show, and pass validate().
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "ir/json.h"
#include "ir/validate.h"

using amk::Result;
using amk::Status;
using namespace amk::ir;
namespace fs = std::filesystem;

namespace {

const fs::path kExamples = fs::path(AMK_SOURCE_DIR) / "examples";

Program load_example(const std::string& name) {
  Result<Program> r = program_load((kExamples / name).string());
  INFO(name << ": " << r.status().message());
  REQUIRE(r.is_ok());
  return std::move(*r);
}

// Examples are what users copy: they must be accepted without a single warning.
void check_valid(const std::string& name, const Program& p) {
  const ValidationResult v = validate(p);
  INFO(name << ":\n" << v.report());
  CHECK(v.ok);
  CHECK(v.errors.empty());
  CHECK(v.warnings.empty());
}

}  // namespace

TEST_CASE("examples: every example loads, validates and round-trips byte-stably", "[ir]") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    const std::string name = entry.path().filename().string();
    const Program p = load_example(name);
    check_valid(name, p);
    const std::string first = program_to_json(p);
    Result<Program> again = program_from_json_text(first);
    INFO(name);
    REQUIRE(again.is_ok());
    CHECK(program_to_json(*again) == first);
  }
  CHECK(count >= 3);
}

TEST_CASE("examples: tiny_gemv is rmsnorm -> 2 GEMV tiles -> argmax on assigned SMs", "[ir]") {
  const Program p = load_example("tiny_gemv.json");
  REQUIRE(p.tasks.size() == 4);
  CHECK(p.tasks[0].op == Opcode::RmsNorm);
  CHECK(p.tasks[1].op == Opcode::GemvTile);
  CHECK(p.tasks[2].op == Opcode::GemvTile);
  CHECK(p.tasks[3].op == Opcode::SampleArgmax);
  for (const Task& t : p.tasks) CHECK(t.sm.has_value());
  REQUIRE(p.target.has_value());
  CHECK(p.target->name == p.meta["gpu"]);
  // The argmax waits for both tiles: an all-join on their shared counter.
  CHECK(p.tasks[3].waits == std::vector<Wait>{Wait{p.tasks[1].out_counter, 2}});
  CHECK(p.tasks[1].out_counter == p.tasks[2].out_counter);
}

TEST_CASE("examples: attention_split_kv splits KV over two partial tiles and combines them", "[ir]") {
  const Program p = load_example("attention_split_kv.json");
  int partial_tiles = 0;
  for (const Task& t : p.tasks) {
    if (t.op == Opcode::AttentionTile) {
      CHECK((t.params.int_or("flags", 0) & kFlagPartialWrite) != 0);
      ++partial_tiles;
    }
    if (t.op == Opcode::KvAppend) {
      REQUIRE(t.inputs.size() == 2);
      CHECK(t.outputs == std::vector<BufferId>{t.inputs[1]});
    }
  }
  CHECK(partial_tiles == 2);
  CHECK(p.tasks.back().op == Opcode::AttentionCombine);
  CHECK(p.tasks.back().inputs.size() == 2);
}

TEST_CASE("examples: paged_mlp shares pages between activations", "[ir]") {
  const Program p = load_example("paged_mlp.json");
  REQUIRE(p.pages.has_value());
  CHECK(p.pages->buffer_to_page.size() == 5);
  CHECK(p.pages->pages.size() == 3);
  for (const auto& [buffer, page] : p.pages->buffer_to_page)
    CHECK(p.buffers.at(static_cast<size_t>(buffer.value)).kind == BufferKind::Activation);
}
