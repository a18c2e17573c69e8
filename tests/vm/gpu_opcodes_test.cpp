// tests/vm/gpu_opcodes_test.cpp: every GPU VM linked into this build (CUDA, HIP or both) exports
// the opcode table its own device compiler built from instructions/device_dispatch.cuh, and that
// table is exactly ir/opcodes.def: no opcode missing on HIP, none missing on CUDA, no extras.
// What it proves: the library linked here was compiled with a complete AMK_DEVICE_OPCODES list,
// which also generates device_execute's switch (one list, two expansions). The first line of
// defence is device_dispatch.cuh's static_assert, evaluated in every nvcc/hipcc pass; this test
// catches a weakened check or a stale library. It needs no GPU, and it does not prove a kernel
// runs correctly on AMD hardware (nothing AMD can run here). With neither VM built it has
// nothing to compare and says so (WARN), which CI's normal build (CUDA sm_75 + HIP gfx90a) avoids.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ir/enums.h"
#include "vm/gpu_backends.h"

using Catch::Contains;

namespace {

/// "3 (RMSNORM)" for messages.
std::string describe(int32_t code) {
  if (code < 0 || code >= amk::ir::kOpcodeCount) return std::to_string(code) + " (not an opcode)";
  return std::to_string(code) + " (" + std::string(amk::ir::opcode_name(static_cast<amk::ir::Opcode>(code))) + ")";
}

/// Every ir opcode the table lacks, and every entry ir does not have or that repeats.
std::vector<std::string> table_problems(const std::vector<int32_t>& table) {
  std::vector<std::string> problems;
  for (int32_t code = 0; code < amk::ir::kOpcodeCount; ++code) {
    const auto n = std::count(table.begin(), table.end(), code);
    if (n == 0) problems.push_back("missing opcode " + describe(code));
    if (n > 1) problems.push_back("opcode " + describe(code) + " listed " + std::to_string(n) + " times");
  }
  for (int32_t code : table)
    if (code < 0 || code >= amk::ir::kOpcodeCount) problems.push_back("extra entry " + describe(code));
  return problems;
}

}  // namespace

TEST_CASE("gpu opcodes: each built GPU VM handles exactly the opcodes of ir/opcodes.def", "[vm]") {
  STATIC_REQUIRE(amk::ir::kOpcodeCount == 20);
  int built = 0;
  for (const std::string backend : {"cuda", "hip"}) {
    INFO("backend " << backend);
    auto table = amk::vm::gpu_device_opcodes(backend);
    if (!amk::vm::gpu_backend_built(backend)) {
      REQUIRE_FALSE(table.is_ok());
      CHECK(table.status().code() == amk::StatusCode::Unsupported);
      CHECK_THAT(table.status().message(), Contains("built without"));
      continue;
    }
    ++built;
    REQUIRE(table.is_ok());
    for (const std::string& p : table_problems(*table)) FAIL_CHECK(backend << ": " << p);
    CHECK(table->size() == static_cast<size_t>(amk::ir::kOpcodeCount));
  }
  if (built == 0) WARN("this build has neither GPU VM: no device opcode table was compared");
}

TEST_CASE("gpu opcodes: the CUDA and HIP builds expose the same opcode list", "[vm]") {
  if (!amk::vm::gpu_backend_built("cuda") || !amk::vm::gpu_backend_built("hip")) {
    WARN("this build lacks the CUDA or the HIP VM (CI's normal build has both): nothing to compare");
    return;
  }
  auto cuda = amk::vm::gpu_device_opcodes("cuda");
  auto hip = amk::vm::gpu_device_opcodes("hip");
  REQUIRE(cuda.is_ok());
  REQUIRE(hip.is_ok());
  std::vector<int32_t> c = *cuda, h = *hip;
  std::sort(c.begin(), c.end());
  std::sort(h.begin(), h.end());
  CHECK(c == h);
}

TEST_CASE("gpu opcodes: the self-check flags a missing, a repeated and an unknown opcode", "[vm]") {
  std::vector<int32_t> table;
  for (int32_t code = 0; code < amk::ir::kOpcodeCount; ++code) table.push_back(code);
  CHECK(table_problems(table).empty());
  table.erase(table.begin() + 7);  // ATTENTION_TILE
  table.push_back(3);
  table.push_back(99);
  const auto problems = table_problems(table);
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Contains("opcode 3 (RMSNORM) listed 2 times"));  // in code order
  CHECK_THAT(problems[1], Contains("missing opcode 7 (ATTENTION_TILE)"));
  CHECK_THAT(problems[2], Contains("extra entry 99"));
}

TEST_CASE("gpu opcodes: an unknown backend name is an argument error", "[vm]") {
  auto r = amk::vm::gpu_device_opcodes("metal");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == amk::StatusCode::InvalidArgument);
}
