// tests/ir/validate_expect.h: the two assertions every validate() test starts from: a program is
// rejected with a given rule (returning that diagnostic for message checks), or accepted; both
// print the full report when they fail.
#pragma once
#include <catch2/catch.hpp>

#include <string>

#include "ir/program_builder.h"
#include "ir/validate.h"

namespace amk::testing {

inline ir::Diagnostic expect_error(const ir::ValidationResult& r, const std::string& rule) {
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  const ir::Diagnostic* d = find_rule(r, rule);
  REQUIRE(d != nullptr);
  return *d;
}

inline void expect_ok(const ir::ValidationResult& r) {
  INFO(r.report());
  REQUIRE(r.ok);
}

}  // namespace amk::testing
