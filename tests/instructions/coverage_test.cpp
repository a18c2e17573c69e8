// tests/instructions/coverage_test.cpp: every opcode in ir/opcodes.def has at least one CPU
// reference test, found in Catch's registry by its tag [op:<lowercase spec name>].
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "ir/enums.h"
#include "vm/abi.h"

TEST_CASE("every opcode has a CPU reference test tagged [op:<name>]", "[instructions]") {
  std::set<std::string> tags;
  for (const auto& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    for (const auto& t : tc.getTestCaseInfo().lcaseTags) tags.insert(t);
  STATIC_REQUIRE(amk::ir::kOpcodeCount == 20);
  STATIC_REQUIRE(AMK_OP_COUNT == 20);
  int covered = 0;
  for (int code = 0; code < amk::ir::kOpcodeCount; ++code) {
    std::string name(amk::ir::opcode_name(static_cast<amk::ir::Opcode>(code)));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    INFO("opcode " << code << " has no test tagged [op:" << name << "]");
    CHECK(tags.count("op:" + name) == 1);
    covered += static_cast<int>(tags.count("op:" + name));
  }
  CHECK(covered == 20);
}
