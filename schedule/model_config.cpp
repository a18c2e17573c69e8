// schedule/model_config.cpp: Hugging Face config.json -> ModelConfig.
// Defaults follow transformers' LlamaConfig, so a config HF accepts means the same thing here.
// Every error starts with "<origin>: <field>:" so the user can find the line to fix.
#include "schedule/model_config.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "ir/text_file.h"

namespace amk::schedule {
namespace {

using nlohmann::json;

// One config being read: keeps the origin for messages.
class Reader {
 public:
  Reader(const json& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  Status error(StatusCode code, const std::string& field, const std::string& what) const {
    return Status(code, origin_ + ": " + field + ": " + what);
  }

  // A positive integer at `obj[key]` (path `field`); absent or null gives `fallback`, or an error
  // when there is no fallback.
  Result<int64_t> positive_int(const json& obj, const char* key, const std::string& field,
                               std::optional<int64_t> fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (fallback) return *fallback;
      return error(StatusCode::InvalidArgument, field, "missing (a positive integer is required)");
    }
    if (!it->is_number_integer()) {
      return error(StatusCode::InvalidArgument, field, "expected a positive integer, got " + it->dump());
    }
    const bool in_range = it->is_number_unsigned() ? it->get<uint64_t>() - 1 < (1ull << 31) - 1
                                                   : it->get<int64_t>() > 0 && it->get<int64_t>() < (1ll << 31);
    if (!in_range) {
      return error(StatusCode::InvalidArgument, field,
                   "expected a positive integer that fits int32, got " + it->dump());
    }
    return it->get<int64_t>();
  }

  // A finite number > 0 at `obj[key]`.
  Result<double> positive_real(const json& obj, const char* key, const std::string& field,
                               std::optional<double> fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (fallback) return *fallback;
      return error(StatusCode::InvalidArgument, field, "missing (a positive number is required)");
    }
    if (!it->is_number()) return error(StatusCode::InvalidArgument, field, "expected a number, got " + it->dump());
    const double v = it->get<double>();
    if (!std::isfinite(v) || v <= 0.0) {
      return error(StatusCode::InvalidArgument, field, "expected a finite number > 0, got " + it->dump());
    }
    return v;
  }

  const json& root() const { return root_; }

 private:
  const json& root_;
  std::string origin_;
};

// model_type and architectures must both say Llama causal LM: refusing early beats a lowering
// that silently drops a bias, a sliding window or a different MLP.
Status check_architecture(const Reader& r) {
  const json& j = r.root();
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string()) {
    return r.error(StatusCode::InvalidArgument, "model_type", "missing (expected \"llama\")");
  }
  if (mt->get<std::string>() != "llama") {
    return r.error(StatusCode::Unsupported, "model_type",
                   mt->dump() + " is not supported: amk lowers the Llama family (\"llama\") only");
  }
  auto arch = j.find("architectures");
  if (arch != j.end() && !arch->is_null()) {
    bool causal = false;
    if (arch->is_array()) {
      for (const auto& a : *arch) causal = causal || (a.is_string() && a.get<std::string>() == "LlamaForCausalLM");
    }
    if (!causal) {
      return r.error(StatusCode::Unsupported, "architectures",
                     arch->dump() + " does not include \"LlamaForCausalLM\" (the only architecture amk lowers)");
    }
  }
  if (auto act = j.find("hidden_act"); act != j.end() && !act->is_null() && *act != "silu") {
    return r.error(StatusCode::Unsupported, "hidden_act", act->dump() + " is not supported (amk lowers \"silu\")");
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    auto b = j.find(key);
    if (b != j.end() && b->is_boolean() && b->get<bool>()) {
      return r.error(StatusCode::Unsupported, key, "true is not supported (amk lowers bias-free projections)");
    }
  }
  return Status::ok();
}

// RoPE: theta and the optional llama3 scaling, from either spelling (see model_config.h).
Status read_rope(const Reader& r, ModelConfig& m) {
  const json& j = r.root();
  const json* params = nullptr;  // transformers 5.x
  const json* scaling = nullptr;  // transformers 4.x
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return r.error(StatusCode::InvalidArgument, "rope_parameters", "expected an object");
    params = &*it;
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return r.error(StatusCode::InvalidArgument, "rope_scaling", "expected an object or null");
    scaling = &*it;
  }

  std::optional<double> theta;
  if (j.contains("rope_theta")) {
    auto t = r.positive_real(j, "rope_theta", "rope_theta", std::nullopt);
    if (!t) return t.status();
    theta = *t;
  }
  if (params != nullptr && params->contains("rope_theta")) {
    auto t = r.positive_real(*params, "rope_theta", "rope_parameters.rope_theta", std::nullopt);
    if (!t) return t.status();
    if (theta && *theta != *t) {
      return r.error(StatusCode::InvalidArgument, "rope_parameters.rope_theta",
                     "disagrees with the top-level rope_theta; keep one of them");
    }
    theta = *t;
  }
  m.rope_theta = theta.value_or(10000.0);

  // The scaling object: rope_parameters wins; rope_scaling is read when it is the only one.
  const json* obj = params != nullptr ? params : scaling;
  const std::string base = params != nullptr ? "rope_parameters" : "rope_scaling";
  if (obj == nullptr) return Status::ok();
  std::string type = "default";
  std::string type_field = base + ".rope_type";
  const char* type_key = obj->contains("rope_type") ? "rope_type" : (obj->contains("type") ? "type" : nullptr);
  if (type_key != nullptr) {
    type_field = base + "." + type_key;
    if (!(*obj)[type_key].is_string()) return r.error(StatusCode::InvalidArgument, type_field, "expected a string");
    type = (*obj)[type_key].get<std::string>();
  }
  if (type == "default") return Status::ok();
  if (type != "llama3") {
    return r.error(StatusCode::Unsupported, type_field,
                   "\"" + type + "\" is not supported (amk implements \"default\" and \"llama3\")");
  }
  Llama3RopeScaling s;
  auto factor = r.positive_real(*obj, "factor", base + ".factor", std::nullopt);
  if (!factor) return factor.status();
  auto low = r.positive_real(*obj, "low_freq_factor", base + ".low_freq_factor", std::nullopt);
  if (!low) return low.status();
  auto high = r.positive_real(*obj, "high_freq_factor", base + ".high_freq_factor", std::nullopt);
  if (!high) return high.status();
  auto orig = r.positive_int(*obj, "original_max_position_embeddings",
                             base + ".original_max_position_embeddings", std::nullopt);
  if (!orig) return orig.status();
  if (*high <= *low) {
    // The smooth band divides by (high - low): equal factors have no band to interpolate over.
    return r.error(StatusCode::InvalidArgument, base + ".high_freq_factor", "must be greater than low_freq_factor");
  }
  s.factor = *factor;
  s.low_freq_factor = *low;
  s.high_freq_factor = *high;
  s.original_max_position_embeddings = *orig;
  m.llama3_scaling = s;
  return Status::ok();
}

Result<ModelConfig> parse(const json& j, const std::string& origin) {
  Reader r(j, origin);
  if (!j.is_object()) return r.error(StatusCode::InvalidArgument, "(root)", "expected a JSON object");
  if (Status s = check_architecture(r); !s) return s;

  ModelConfig m;
  if (auto n = j.find("_name_or_path"); n != j.end() && n->is_string()) m.name = n->get<std::string>();
  struct IntField {
    const char* key;
    int64_t* dst;
  };
  for (IntField f : {IntField{"hidden_size", &m.hidden_size}, IntField{"intermediate_size", &m.intermediate_size},
                     IntField{"num_hidden_layers", &m.num_hidden_layers},
                     IntField{"num_attention_heads", &m.num_attention_heads}, IntField{"vocab_size", &m.vocab_size}}) {
    auto v = r.positive_int(j, f.key, f.key, std::nullopt);
    if (!v) return v.status();
    *f.dst = *v;
  }
  auto kv = r.positive_int(j, "num_key_value_heads", "num_key_value_heads", m.num_attention_heads);
  if (!kv) return kv.status();
  m.num_key_value_heads = *kv;
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    return r.error(StatusCode::InvalidArgument, "num_key_value_heads",
                   std::to_string(m.num_key_value_heads) + " does not divide num_attention_heads (" +
                       std::to_string(m.num_attention_heads) + ")");
  }
  const bool has_head_dim = j.contains("head_dim") && !j["head_dim"].is_null();
  if (!has_head_dim && m.hidden_size % m.num_attention_heads != 0) {
    return r.error(StatusCode::InvalidArgument, "hidden_size",
                   "not divisible by num_attention_heads and no head_dim is given");
  }
  auto hd = r.positive_int(j, "head_dim", "head_dim", m.hidden_size / m.num_attention_heads);
  if (!hd) return hd.status();
  m.head_dim = *hd;
  if (m.head_dim % 2 != 0) {
    return r.error(StatusCode::InvalidArgument, "head_dim", "must be even (rotate-half RoPE splits it in two)");
  }
  auto eps = r.positive_real(j, "rms_norm_eps", "rms_norm_eps", 1e-6);
  if (!eps) return eps.status();
  m.rms_norm_eps = *eps;
  auto mpe = r.positive_int(j, "max_position_embeddings", "max_position_embeddings", 2048);
  if (!mpe) return mpe.status();
  m.max_position_embeddings = *mpe;
  if (auto t = j.find("tie_word_embeddings"); t != j.end() && !t->is_null()) {
    if (!t->is_boolean()) return r.error(StatusCode::InvalidArgument, "tie_word_embeddings", "expected true or false");
    m.tie_word_embeddings = t->get<bool>();
  }
  if (Status s = read_rope(r, m); !s) return s;
  return m;
}

}  // namespace

Result<ModelConfig> model_config_from_json_text(std::string_view text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return Status(StatusCode::ParseError, origin + ": not valid JSON: " + e.what());
  }
  try {
    return parse(j, origin);
  } catch (const json::exception& e) {  // a type error the checks above missed: still not a crash
    return Status(StatusCode::InvalidArgument, origin + ": " + e.what());
  }
}

Result<ModelConfig> model_config_load(const std::string& path) {
  Result<std::string> text = ir::read_text_file(path, "model config");
  if (!text) return text.status();
  auto m = model_config_from_json_text(*text, path);
  if (!m || !m->name.empty()) return m;
  // Name from the path: "models/tiny_llama/config.json" -> "tiny_llama", "llama-3-8b.json" -> "llama-3-8b".
  std::string p = path;
  const size_t slash = p.find_last_of('/');
  std::string file = slash == std::string::npos ? p : p.substr(slash + 1);
  std::string stem = file.substr(0, file.rfind('.'));
  if (stem == "config" && slash != std::string::npos) {
    std::string dir = p.substr(0, slash);
    const size_t s2 = dir.find_last_of('/');
    stem = s2 == std::string::npos ? dir : dir.substr(s2 + 1);
  }
  m->name = stem;
  return m;
}

}  // namespace amk::schedule
