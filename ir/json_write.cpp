// ir/json_write.cpp: STUB, to be replaced.
#include "ir/json.h"
namespace amk::ir {
std::string program_to_json(const Program&) { return "{}"; }
Status program_save(const Program&, const std::string&) { return Status(StatusCode::Unsupported, "not implemented"); }
nlohmann::ordered_json gpu_target_to_json(const GpuTarget&) { return nlohmann::ordered_json::object(); }
}  // namespace amk::ir
