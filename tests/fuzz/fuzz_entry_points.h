// tests/fuzz/fuzz_entry_points.h: what each libFuzzer target does with one input, shared by the
// fuzz binaries (fuzz_<target>.cpp, which abort when a check fails) and the Catch2 regression test
// (fuzz_regressions_test.cpp, which replays every committed finding in the normal test suite).
// Each function returns "" when the input was handled correctly, else what broke. Crashes and
// sanitizer reports are the other way an input fails.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/json.h"
#include "ir/validate.h"
#include "loader/safetensors_header.h"
#include "schedule/model_config.h"

namespace amk::fuzz {

/// Program JSON reader: any bytes give a Program or a Status. A loaded program keeps the writer's
/// promise (ir/json.h): written and read back, it re-serializes to the same bytes.
inline std::string program_json_one(std::string_view text) {
  Result<ir::Program> program = ir::program_from_json_text(text);
  if (!program.is_ok()) return "";
  const std::string once = ir::program_to_json(program.value());
  Result<ir::Program> again = ir::program_from_json_text(once);
  if (!again.is_ok()) return "the writer's output does not load: " + again.status().message();
  if (ir::program_to_json(again.value()) != once) return "the JSON round trip is not byte-stable";
  return "";
}

/// validate() on every program the reader accepts: a verdict that agrees with its diagnostics.
inline std::string validate_one(std::string_view text) {
  Result<ir::Program> program = ir::program_from_json_text(text);
  if (!program.is_ok()) return "";
  const ir::ValidationResult result = ir::validate(program.value());
  if (result.ok != result.errors.empty()) return "the verdict contradicts the diagnostics";
  if (result.report().empty()) return "empty report";
  return "";
}

/// Safetensors header: input = 8 bytes little-endian data-section size, then the JSON header. An
/// accepted header keeps SafetensorsFile's promises: every tensor inside the data section, byte size
/// = numel * itemsize, no two tensors overlapping.
inline std::string safetensors_header_one(std::string_view bytes) {
  if (bytes.size() < 8) return "";
  uint64_t data_bytes = 0;
  for (int i = 7; i >= 0; --i) data_bytes = data_bytes << 8 | static_cast<uint8_t>(bytes[i]);
  auto parsed = loader::safetensors_parse_header(bytes.substr(8), data_bytes);
  if (!parsed.is_ok()) return "";
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const loader::TensorInfo& t : parsed.value().tensors) {
    if (t.begin > t.end || t.end > data_bytes) return "tensor " + t.name + " lies outside the data section";
    if (t.numel < 0 || t.nbytes() != static_cast<uint64_t>(t.numel) * loader::st_dtype_itemsize(t.dtype))
      return "tensor " + t.name + " has a byte size that is not numel * itemsize";
    if (t.nbytes() > 0) ranges.emplace_back(t.begin, t.end);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) return "two tensors overlap";
  return "";
}

/// HF config.json reader: any bytes give a ModelConfig or a Status; an accepted config has every
/// size positive and a whole GQA grouping.
inline std::string model_config_one(std::string_view text) {
  auto config = schedule::model_config_from_json_text(text, "fuzz.json");
  if (!config.is_ok()) return "";
  const schedule::ModelConfig& c = config.value();
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_hidden_layers <= 0 || c.num_attention_heads <= 0 ||
      c.num_key_value_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0)
    return "an accepted config has a size that is not positive";
  if (c.num_attention_heads % c.num_key_value_heads != 0) return "an accepted config has a fractional GQA group";
  return "";
}

}  // namespace amk::fuzz
