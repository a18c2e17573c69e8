// ir/validate.cpp: STUB, to be replaced.
#include "ir/validate.h"
namespace amk::ir {
std::string ValidationResult::report() const { return "not implemented"; }
ValidationResult validate(const Program&) noexcept { ValidationResult r; r.errors.push_back({Severity::Error, "stub", "validate() not implemented", {}, {}, {}}); return r; }
}  // namespace amk::ir
