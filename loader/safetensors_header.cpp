// loader/safetensors_header.cpp: the JSON header of a safetensors file, checked field by field.
// Never throws: the JSON parser's exceptions are caught here; every message names the tensor.
#include "loader/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace amk::loader {
namespace {

using Json = nlohmann::ordered_json;  // keeps header order

Status fail(std::string message) { return Status(StatusCode::ParseError, std::move(message)); }

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// Deepest object/array nesting, ignoring brackets inside strings. Stops early past the limit.
int max_nesting(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    else if (c == '}' || c == ']') --depth;
    if (deepest > kSafetensorsMaxHeaderDepth) break;
  }
  return deepest;
}

/// A JSON number that is a non-negative integer (not a float, however integral it looks).
bool get_non_negative(const Json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

std::string describe_bad_integer(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return "is negative (" + v.dump() + ")";
  if (v.is_number_float()) return "is not an integer (" + v.dump() + ")";
  return "is not a number (" + v.dump() + ")";
}

Status parse_shape(const std::string& where, const Json& shape, TensorInfo* info) {
  if (!shape.is_array()) return Status(StatusCode::ParseError, where + ": \"shape\" is not an array");
  if (shape.size() > 64) return Status(StatusCode::ParseError, where + ": \"shape\" has more than 64 dimensions");
  uint64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t d = 0;
    const std::string field = where + ": shape[" + std::to_string(i) + "]";
    if (!get_non_negative(shape[i], &d)) return Status(StatusCode::ParseError, field + " " + describe_bad_integer(shape[i]));
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return Status(StatusCode::ParseError, field + " is too large (" + shape[i].dump() + ")");
    if (d != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      return Status(StatusCode::ParseError, where + ": \"shape\" " + shape.dump() + " overflows the element count");
    numel *= d;
    info->shape.push_back(static_cast<int64_t>(d));
  }
  info->numel = static_cast<int64_t>(numel);
  return Status::ok();
}

Status parse_offsets(const std::string& where, const Json& offsets, uint64_t data_bytes, TensorInfo* info) {
  if (!offsets.is_array() || offsets.size() != 2)
    return Status(StatusCode::ParseError, where + ": \"data_offsets\" is not an array of two integers");
  uint64_t begin = 0, end = 0;
  if (!get_non_negative(offsets[0], &begin))
    return Status(StatusCode::ParseError, where + ": data_offsets[0] " + describe_bad_integer(offsets[0]));
  if (!get_non_negative(offsets[1], &end))
    return Status(StatusCode::ParseError, where + ": data_offsets[1] " + describe_bad_integer(offsets[1]));
  const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  if (begin > end) return Status(StatusCode::ParseError, where + ": data_offsets " + range + " are out of order");
  if (end > data_bytes)
    return Status(StatusCode::ParseError, where + ": data_offsets " + range + " lie beyond the data section (" +
                                              std::to_string(data_bytes) + " bytes)");
  const auto item = static_cast<uint64_t>(st_dtype_itemsize(info->dtype));
  const auto numel = static_cast<uint64_t>(info->numel);
  if (numel > std::numeric_limits<uint64_t>::max() / item || end - begin != numel * item)
    return Status(StatusCode::ParseError, where + ": data_offsets " + range + " hold " + std::to_string(end - begin) +
                                              " bytes, but " + std::to_string(numel) + " elements of " +
                                              std::string(st_dtype_name(info->dtype)) + " need " +
                                              (numel > std::numeric_limits<uint64_t>::max() / item
                                                   ? std::string("2^64 or more")
                                                   : std::to_string(numel * item)));
  info->begin = begin;
  info->end = end;
  return Status::ok();
}

Result<TensorInfo> parse_tensor(const std::string& name, const Json& entry, uint64_t data_bytes) {
  const std::string where = "tensor " + in_quotes(name);
  if (!entry.is_object()) return fail(where + ": entry is not an object");
  TensorInfo info;
  info.name = name;
  auto dtype = entry.find("dtype");
  if (dtype == entry.end()) return fail(where + ": missing \"dtype\"");
  if (!dtype->is_string()) return fail(where + ": \"dtype\" is not a string (" + dtype->dump() + ")");
  auto st = st_dtype_from_name(dtype->get_ref<const std::string&>());
  if (!st) return fail(where + ": unknown dtype " + dtype->dump());
  info.dtype = *st;
  auto shape = entry.find("shape");
  if (shape == entry.end()) return fail(where + ": missing \"shape\"");
  if (Status s = parse_shape(where, *shape, &info); !s) return s;
  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end()) return fail(where + ": missing \"data_offsets\"");
  if (Status s = parse_offsets(where, *offsets, data_bytes, &info); !s) return s;
  return info;
}

Status parse_metadata(const Json& meta, std::map<std::string, std::string>* out) {
  if (!meta.is_object()) return Status(StatusCode::ParseError, "__metadata__: is not an object");
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    if (!it.value().is_string())
      return Status(StatusCode::ParseError, "__metadata__: value of " + in_quotes(it.key()) + " is not a string");
    (*out)[it.key()] = it.value().get<std::string>();
  }
  return Status::ok();
}

/// Any two non-empty tensors whose byte ranges intersect.
Status check_overlaps(const std::vector<TensorInfo>& tensors) {
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].end > tensors[i].begin) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].begin != tensors[b].begin ? tensors[a].begin < tensors[b].begin : a < b;
  });
  // Sorted by begin, a range overlaps some earlier one iff it starts before the furthest end so far.
  size_t furthest = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const TensorInfo& cur = tensors[order[k]];
    if (k > 0 && cur.begin < tensors[furthest].end) {
      const TensorInfo& prev = tensors[furthest];
      return Status(StatusCode::ParseError, "tensor " + in_quotes(cur.name) + ": data_offsets [" +
                                                std::to_string(cur.begin) + ", " + std::to_string(cur.end) +
                                                "] overlap tensor " + in_quotes(prev.name) + " [" +
                                                std::to_string(prev.begin) + ", " + std::to_string(prev.end) + "]");
    }
    if (k == 0 || cur.end > tensors[furthest].end) furthest = order[k];
  }
  return Status::ok();
}

}  // namespace

Result<ParsedHeader> safetensors_parse_header(std::string_view header, uint64_t data_bytes) {
  if (max_nesting(header) > kSafetensorsMaxHeaderDepth)
    return fail("header nests objects/arrays deeper than " + std::to_string(kSafetensorsMaxHeaderDepth) + " levels");

  // The callback sees keys as they are parsed: it remembers the current top-level key (so a JSON
  // error can name the tensor it is in) and catches duplicate tensor names, which the DOM drops.
  std::string current, duplicate;
  std::set<std::string> seen;
  Json root;
  try {
    Json::parser_callback_t cb = [&](int depth, Json::parse_event_t event, Json& parsed) {
      if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string()) {
        current = parsed.get<std::string>();
        if (!seen.insert(current).second && duplicate.empty()) duplicate = current;
      }
      return true;
    };
    root = Json::parse(header.begin(), header.end(), cb, /*allow_exceptions=*/true);
  } catch (const Json::exception& e) {
    std::string where = current.empty() ? std::string("header") : "header, in tensor " + in_quotes(current);
    return fail(where + ": not valid JSON: " + e.what());
  } catch (const std::exception& e) {
    return fail(std::string("header: could not be parsed: ") + e.what());
  }
  if (!duplicate.empty()) return fail("tensor " + in_quotes(duplicate) + ": appears twice in the header");
  if (!root.is_object()) return fail("header: is not a JSON object");

  ParsedHeader out;
  try {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (Status s = parse_metadata(it.value(), &out.metadata); !s) return s;
        continue;
      }
      auto info = parse_tensor(it.key(), it.value(), data_bytes);
      if (!info) return info.status();
      out.tensors.push_back(std::move(info).value());
    }
  } catch (const std::exception& e) {  // defensive: the checks above leave nothing to throw
    return fail(std::string("header: unexpected error: ") + e.what());
  }
  if (Status s = check_overlaps(out.tensors); !s) return s;
  return out;
}

}  // namespace amk::loader
