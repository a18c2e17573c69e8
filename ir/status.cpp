// ir/status.cpp
#include "ir/status.h"

namespace amk {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::Ok: return "Ok";
    case StatusCode::InvalidArgument: return "InvalidArgument";
    case StatusCode::ParseError: return "ParseError";
    case StatusCode::ValidationFailed: return "ValidationFailed";
    case StatusCode::IoError: return "IoError";
    case StatusCode::NotFound: return "NotFound";
    case StatusCode::Unsupported: return "Unsupported";
    case StatusCode::Timeout: return "Timeout";
    case StatusCode::GpuRuntime: return "GpuRuntime";
    case StatusCode::DeviceError: return "DeviceError";
    case StatusCode::Internal: return "Internal";
  }
  return "?";
}

}  // namespace amk
