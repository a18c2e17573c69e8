// schedule/model_config.h: the model shape amk lowers, read from a Hugging Face config.json.
// Only the Llama family (model_type "llama", architectures LlamaForCausalLM) is accepted; anything
// else is refused with a message naming the field, so a lowering never guesses at an architecture.
// Both spellings of the RoPE settings are read: transformers 4.x top-level `rope_theta` +
// `rope_scaling`, and transformers 5.x `rope_parameters` {rope_theta, rope_type, ...}.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace amk::schedule {

/// Llama 3.1-style RoPE frequency scaling (HF rope_type "llama3").
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

/// A Llama-family decoder, as far as decode lowering needs it. All sizes are checked positive.
struct ModelConfig {
  std::string name;                 ///< for program meta: `_name_or_path`, else set by the caller
  int64_t hidden_size = 0;          ///< H
  int64_t intermediate_size = 0;    ///< I (MLP width)
  int64_t num_hidden_layers = 0;    ///< L
  int64_t num_attention_heads = 0;  ///< query heads
  int64_t num_key_value_heads = 0;  ///< KV heads (GQA); defaults to num_attention_heads
  int64_t head_dim = 0;             ///< defaults to hidden_size / num_attention_heads
  int64_t vocab_size = 0;           ///< V
  double rms_norm_eps = 1e-6;       ///< HF LlamaConfig default when absent
  double rope_theta = 10000.0;      ///< HF LlamaConfig default when absent
  int64_t max_position_embeddings = 2048;  ///< HF LlamaConfig default when absent
  bool tie_word_embeddings = false;        ///< LM head reuses model.embed_tokens.weight
  std::optional<Llama3RopeScaling> llama3_scaling;  ///< set for rope_type "llama3"

  int64_t q_dim() const { return num_attention_heads * head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * head_dim; }
  /// Query heads per KV head (the GQA group size); 1 for a config without KV heads (unchecked).
  int64_t gqa_group() const { return num_key_value_heads > 0 ? num_attention_heads / num_key_value_heads : 1; }
};

/// Parse and check config.json text. `origin` (a file name) prefixes every error message, which
/// names the offending JSON field. Refusals of well-formed but unsupported configs are Unsupported;
/// missing, mistyped or inconsistent fields are InvalidArgument; bad JSON is ParseError.
[[nodiscard]] Result<ModelConfig> model_config_from_json_text(std::string_view text, const std::string& origin);

/// Read `path` and parse it. When the config has no `_name_or_path`, the name is the file's
/// parent directory for a file called config.json, else the file's stem.
[[nodiscard]] Result<ModelConfig> model_config_load(const std::string& path);

}  // namespace amk::schedule
