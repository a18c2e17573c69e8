// ir/params.h: opcode parameters. Values are kept as written (int, real, string, bool) so that
// validate() can name a wrongly typed parameter instead of the loader silently coercing it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace amk::ir {

/// One parameter value as it appeared in the program.
using ParamValue = std::variant<int64_t, double, std::string, bool>;

/// How a known parameter is marshalled into amk_params_t.
enum class ParamType { Int32, Real, String };

/// The known parameter keys: 19 int32 fields in ABI order, then eps, scale, theta, then recipe.
struct ParamField {
  std::string_view key;
  ParamType type;
  int abi_index;  ///< slot in amk_params_t's int32 array (or float array for Real); -1 for String
};
/// All known fields, in ABI order.
const std::vector<ParamField>& param_fields();
/// The field for `key`, or nullptr when the key is unknown.
const ParamField* param_field_find(std::string_view key);

/// An ordered key -> value map (small; order preserved for stable round-trips).
class Params {
 public:
  /// Set or replace a value, keeping the key's first position.
  void set(std::string key, ParamValue value);
  /// The raw value, or nullptr.
  const ParamValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  /// The value as an integer when it is stored as one.
  std::optional<int64_t> get_int(std::string_view key) const;
  /// The value as a real when it is stored as a number (int or real).
  std::optional<double> get_real(std::string_view key) const;
  /// The value as a string when it is stored as one.
  std::optional<std::string> get_string(std::string_view key) const;
  /// Integer value or a default.
  int64_t int_or(std::string_view key, int64_t fallback) const { return get_int(key).value_or(fallback); }
  bool erase(std::string_view key);

  const std::vector<std::pair<std::string, ParamValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  bool operator==(const Params& o) const { return items_ == o.items_; }

 private:
  std::vector<std::pair<std::string, ParamValue>> items_;
};

/// Text of a value for diagnostics ("1.5", "true", "\"x\"").
std::string param_value_text(const ParamValue& v);

/// `flags` bits (DESIGN.md): bit0 causal, bit1 PARTIAL_WRITE; FUSED keeps its recipe id in bits 16-31.
inline constexpr int64_t kFlagCausal = 1 << 0;
inline constexpr int64_t kFlagPartialWrite = 1 << 1;
/// pos follows the decode step: effective pos = params.pos + step.pos (ROPE, KV_APPEND).
inline constexpr int64_t kFlagStepPos = 1 << 2;
/// attention window follows the step: [kv_start, min(kv_start + kv_len, step.pos + 1)).
inline constexpr int64_t kFlagStepKv = 1 << 3;
/// The task adds its result into its output (F32, atomic adds) instead of storing it: tasks that
/// accumulate into the same bytes need no order among themselves (docs/FOLD.md). Only recipes that
/// accumulate take it (RMSNORM_MLP_FOLD, which requires it).
inline constexpr int64_t kFlagAccumulate = 1 << 4;
inline constexpr int kFlagRecipeShift = 16;

}  // namespace amk::ir
