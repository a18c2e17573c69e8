// ir/validate_params.cpp: parameter presence and types (DESIGN.md): int params are int32 stored as
// integers (never a real, bool or string), real params are finite numbers, `recipe` names a FUSED
// recipe, and unknown keys are warnings because they never reach amk_params_t.
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "ir/opspec.h"
#include "ir/validate_checks.h"

namespace amk::ir::detail {
namespace {

const char* kind_of(const ParamValue& v) {
  if (std::holds_alternative<int64_t>(v)) return "an integer";
  if (std::holds_alternative<double>(v)) return "a real";
  if (std::holds_alternative<bool>(v)) return "a bool";
  return "a string";
}

std::string recipe_names() {
  std::string out;
  for (const RecipeSpec& r : recipe_specs()) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

// param_field_find() compares against every known key; a million tasks ask for the same few.
const ParamField* field_of(std::string_view key) {
  static const std::unordered_map<std::string_view, const ParamField*> table = [] {
    std::unordered_map<std::string_view, const ParamField*> m;
    for (const ParamField& f : param_fields()) m.emplace(f.key, &f);
    return m;
  }();
  auto it = table.find(key);
  return it == table.end() ? nullptr : it->second;
}

void require(Context& cx, int32_t t, const std::string& what, std::string_view key) {
  if (!cx.program.tasks[t].params.has(key))
    cx.sink.error("params.required", task_ref(cx.program, t) + ": " + what + " requires param \"" + std::string(key) + "\"", {t});
}

}  // namespace

void check_params(Context& cx, int32_t t) {
  const Task& task = cx.program.tasks[t];
  const OpSpec& spec = op_spec(task.op);
  for (std::string_view key : spec.required_params) require(cx, t, std::string(spec.name), key);
  if (task.op == Opcode::Fused) {
    if (auto name = task.params.get_string("recipe"))
      if (const RecipeSpec* r = recipe_find(*name))
        for (std::string_view key : r->required_params) require(cx, t, "FUSED recipe " + *name, key);
  }
  for (const auto& [key, value] : task.params.items()) {
    const ParamField* field = field_of(key);
    auto param = [&, key = std::cref(key)] { return task_ref(cx.program, t) + ": param \"" + key.get() + "\""; };
    if (field == nullptr) {
      cx.sink.warning("params.unknown", param() + " is not a known parameter; it will not reach the kernel", {t});
      continue;
    }
    switch (field->type) {
      case ParamType::Int32: {
        const auto* i = std::get_if<int64_t>(&value);
        if (i == nullptr) {
          cx.sink.error("params.type", param() + " must be an int32, got " + kind_of(value) + " " + param_value_text(value), {t});
        } else if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max()) {
          cx.sink.error("params.type", param() + " = " + std::to_string(*i) + " is outside int32", {t});
        }
        break;
      }
      case ParamType::Real: {
        const auto* d = std::get_if<double>(&value);
        if (d == nullptr && !std::holds_alternative<int64_t>(value))
          cx.sink.error("params.type", param() + " must be a number, got " + kind_of(value) + " " + param_value_text(value), {t});
        else if (d != nullptr && !std::isfinite(*d))
          cx.sink.error("params.type", param() + " must be finite, got " + param_value_text(value), {t});
        break;
      }
      case ParamType::String: {
        const auto* str = std::get_if<std::string>(&value);
        if (task.op != Opcode::Fused) {
          cx.sink.warning("params.unknown", param() + " only means something to FUSED; it is ignored here", {t});
        } else if (str == nullptr) {
          cx.sink.error("params.type", param() + " must be a recipe name, got " + kind_of(value) + " " + param_value_text(value), {t});
        } else if (recipe_find(*str) == nullptr) {
          cx.sink.error("params.type", param() + " = \"" + *str + "\" is not a FUSED recipe (known: " + recipe_names() + ")", {t});
        }
        break;
      }
    }
  }
}

}  // namespace amk::ir::detail
