// loader/safetensors_header.h: parse and check a safetensors JSON header (internal to amk_loader).
// Works on bytes only, so every corruption case is testable without a file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "loader/safetensors.h"

namespace amk::loader {

/// Objects and arrays nested deeper than this are refused before the JSON parser sees them
/// (a valid header nests 3 levels; the limit stops a 100 MB "[[[[..." from exhausting memory).
inline constexpr int kSafetensorsMaxHeaderDepth = 8;

struct ParsedHeader {
  std::vector<TensorInfo> tensors;  ///< header order
  std::map<std::string, std::string> metadata;
};

/// Parse `header` (the N JSON bytes) for a data section of `data_bytes` bytes. Checks every field,
/// every range against the data section, sizes against dtype and shape, and pairwise overlap.
/// ParseError messages name the tensor (or `__metadata__`) and the field.
Result<ParsedHeader> safetensors_parse_header(std::string_view header, uint64_t data_bytes);

}  // namespace amk::loader
