// loader/marshal.cpp: buffer descriptors, instructions and producer counts.
#include "loader/marshal.h"

#include <array>
#include <cmath>
#include <limits>

#include "ir/opspec.h"
#include "ir/params.h"
#include "loader/names.h"

namespace amk::loader {
namespace {

// amk_params_t's fields in ABI order; ir::param_fields() abi_index indexes these tables.
constexpr std::array<int32_t amk_params_t::*, 19> kIntSlots = {
    &amk_params_t::K,        &amk_params_t::N,        &amk_params_t::M,          &amk_params_t::N_tile,
    &amk_params_t::M_tile,   &amk_params_t::n_off,    &amk_params_t::m_off,      &amk_params_t::hidden,
    &amk_params_t::vocab,    &amk_params_t::head_dim, &amk_params_t::n_heads,    &amk_params_t::n_kv_heads,
    &amk_params_t::kv_start, &amk_params_t::kv_len,   &amk_params_t::pos,        &amk_params_t::qdtype,
    &amk_params_t::flags,    &amk_params_t::group,    &amk_params_t::dim};
constexpr std::array<float amk_params_t::*, 3> kRealSlots = {&amk_params_t::eps, &amk_params_t::scale,
                                                              &amk_params_t::theta};

Status bad_param(const ir::Task& t, const std::string& key, const std::string& what) {
  return Status(StatusCode::InvalidArgument, task_name(t) + ": param \"" + key + "\" " + what);
}

Status marshal_param(const ir::Task& t, const std::string& key, const ir::ParamValue& v, amk_params_t* out,
                     int64_t* recipe) {
  const ir::ParamField* field = ir::param_field_find(key);
  if (field == nullptr) return Status::ok();  // unknown keys do not marshal (validate() warns)
  switch (field->type) {
    case ir::ParamType::Int32: {
      const auto* i = std::get_if<int64_t>(&v);
      if (i == nullptr) return bad_param(t, key, "must be an integer, got " + ir::param_value_text(v));
      if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
        return bad_param(t, key, "= " + std::to_string(*i) + " does not fit an int32");
      out->*kIntSlots.at(static_cast<size_t>(field->abi_index)) = static_cast<int32_t>(*i);
      return Status::ok();
    }
    case ir::ParamType::Real: {
      double d = 0.0;
      if (const auto* i = std::get_if<int64_t>(&v)) d = static_cast<double>(*i);
      else if (const auto* r = std::get_if<double>(&v)) d = *r;
      else return bad_param(t, key, "must be a number, got " + ir::param_value_text(v));
      if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max())
        return bad_param(t, key, "= " + ir::param_value_text(v) + " is not a finite float");
      out->*kRealSlots.at(static_cast<size_t>(field->abi_index)) = static_cast<float>(d);
      return Status::ok();
    }
    case ir::ParamType::String: {
      if (t.op != ir::Opcode::Fused) return Status::ok();  // only FUSED reads `recipe`
      const auto* s = std::get_if<std::string>(&v);
      const ir::RecipeSpec* spec = s ? ir::recipe_find(*s) : nullptr;
      if (spec == nullptr) return bad_param(t, key, "= " + ir::param_value_text(v) + " is not a known recipe");
      *recipe = static_cast<int64_t>(spec->recipe);
      return Status::ok();
    }
  }
  return Status::ok();
}

}  // namespace

amk_buffer_t marshal_buffer(const ir::Buffer& b, void* ptr) {
  amk_buffer_t out{};
  out.ptr = ptr;
  out.numel = b.numel();
  out.rank = static_cast<int32_t>(b.shape.size());
  out.dtype = static_cast<int32_t>(b.dtype);
  out.space = static_cast<int32_t>(b.space);
  const std::vector<int64_t> strides = b.contiguous_strides();
  for (size_t i = 0; i < b.shape.size() && i < AMK_MAX_RANK; ++i) {
    out.shape[i] = b.shape[i];
    out.stride[i] = strides[i];
  }
  return out;
}

Result<amk_instruction_t> marshal_task(const ir::Task& t) {
  amk_instruction_t ins{};
  ins.op = static_cast<int32_t>(t.op);
  ins.n_inputs = static_cast<int32_t>(t.inputs.size());
  ins.n_outputs = static_cast<int32_t>(t.outputs.size());
  ins.n_waits = static_cast<int32_t>(t.waits.size());
  for (size_t i = 0; i < AMK_MAX_INPUTS; ++i) ins.inputs[i] = i < t.inputs.size() ? t.inputs[i].value : -1;
  for (size_t i = 0; i < AMK_MAX_OUTPUTS; ++i) ins.outputs[i] = i < t.outputs.size() ? t.outputs[i].value : -1;
  for (size_t i = 0; i < AMK_MAX_WAITS; ++i) {
    ins.wait_counter[i] = i < t.waits.size() ? t.waits[i].counter.value : -1;
    ins.wait_threshold[i] = i < t.waits.size() ? static_cast<uint32_t>(t.waits[i].threshold) : 0u;
  }
  ins.out_counter = t.out_counter.value;
  int64_t recipe = 0;
  for (const auto& [key, value] : t.params.items())
    if (Status s = marshal_param(t, key, value, &ins.params, &recipe); !s) return s;
  if (t.op == ir::Opcode::Fused) {
    if (recipe == 0) return Status(StatusCode::InvalidArgument, task_name(t) + ": FUSED task has no \"recipe\" param");
    const auto low = static_cast<uint32_t>(ins.params.flags) & 0xffffu;
    ins.params.flags = static_cast<int32_t>(low | (static_cast<uint32_t>(recipe) << AMK_FLAG_RECIPE_SHIFT));
  }
  return ins;
}

std::vector<uint32_t> counter_producers(const ir::Program& program) {
  std::vector<uint32_t> producers(program.counters.size(), 0);
  for (const ir::Task& t : program.tasks) ++producers[static_cast<size_t>(t.out_counter.value)];
  return producers;
}

}  // namespace amk::loader
