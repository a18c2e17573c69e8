// ir/params.cpp: the known parameter fields (DESIGN.md) and the ordered Params map.
#include "ir/params.h"

#include <cmath>
#include <sstream>

namespace amk::ir {

const std::vector<ParamField>& param_fields() {
  // Order is the ABI order of amk_params_t: 19 int32 fields, then eps, scale, theta.
  static const std::vector<ParamField> fields = {
      {"K", ParamType::Int32, 0},         {"N", ParamType::Int32, 1},         {"M", ParamType::Int32, 2},
      {"N_tile", ParamType::Int32, 3},    {"M_tile", ParamType::Int32, 4},    {"n_off", ParamType::Int32, 5},
      {"m_off", ParamType::Int32, 6},     {"hidden", ParamType::Int32, 7},    {"vocab", ParamType::Int32, 8},
      {"head_dim", ParamType::Int32, 9},  {"n_heads", ParamType::Int32, 10},  {"n_kv_heads", ParamType::Int32, 11},
      {"kv_start", ParamType::Int32, 12}, {"kv_len", ParamType::Int32, 13},   {"pos", ParamType::Int32, 14},
      {"qdtype", ParamType::Int32, 15},   {"flags", ParamType::Int32, 16},    {"group", ParamType::Int32, 17},
      {"dim", ParamType::Int32, 18},      {"eps", ParamType::Real, 0},        {"scale", ParamType::Real, 1},
      {"theta", ParamType::Real, 2},      {"recipe", ParamType::String, -1},
  };
  return fields;
}

const ParamField* param_field_find(std::string_view key) {
  for (const auto& f : param_fields())
    if (f.key == key) return &f;
  return nullptr;
}

void Params::set(std::string key, ParamValue value) {
  for (auto& kv : items_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

const ParamValue* Params::find(std::string_view key) const {
  for (const auto& kv : items_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

std::optional<int64_t> Params::get_int(std::string_view key) const {
  const ParamValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  return std::nullopt;
}

std::optional<double> Params::get_real(std::string_view key) const {
  const ParamValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::string> Params::get_string(std::string_view key) const {
  const ParamValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  return std::nullopt;
}

bool Params::erase(std::string_view key) {
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    if (it->first == key) {
      items_.erase(it);
      return true;
    }
  }
  return false;
}

std::string param_value_text(const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  std::ostringstream os;
  os.precision(17);
  os << std::get<double>(v);
  return os.str();
}

}  // namespace amk::ir
