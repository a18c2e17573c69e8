// tests/ir/smoke_test.cpp: the opcode table is complete and consistent.
#include <catch2/catch.hpp>

#include "ir/enums.h"
#include "ir/opspec.h"

TEST_CASE("opcode names round-trip through opcodes.def", "[ir]") {
  for (int code = 0; code < amk::ir::kOpcodeCount; ++code) {
    auto op = static_cast<amk::ir::Opcode>(code);
    auto back = amk::ir::opcode_from_name(amk::ir::opcode_name(op));
    REQUIRE(back.has_value());
    CHECK(static_cast<int>(*back) == code);
    CHECK(amk::ir::op_spec(op).op == op);
  }
  CHECK(amk::ir::opcode_name(amk::ir::Opcode::Fused) == "FUSED");
  CHECK_FALSE(amk::ir::opcode_from_name("GEMV").has_value());
}
