// ir/json_read.cpp: STUB, to be replaced.
#include "ir/json.h"
namespace amk::ir {
Result<Program> program_from_json_text(std::string_view) { return Status(StatusCode::Unsupported, "not implemented"); }
Result<Program> program_load(const std::string&) { return Status(StatusCode::Unsupported, "not implemented"); }
Result<GpuTarget> gpu_target_from_json(const nlohmann::json&, const std::string&) { return Status(StatusCode::Unsupported, "not implemented"); }
}  // namespace amk::ir
