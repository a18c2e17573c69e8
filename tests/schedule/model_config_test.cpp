// tests/schedule/model_config_test.cpp: reading Hugging Face config.json files into ModelConfig:
// both RoPE spellings, llama3 scaling, refusals (architecture, rope type) and field-named errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "schedule/model_config.h"

using amk::StatusCode;
using amk::schedule::model_config_from_json_text;
using amk::schedule::model_config_load;
using Catch::Matchers::Contains;

namespace {

const std::string kSrc = AMK_SOURCE_DIR;

// A minimal transformers-4.x Llama config to mutate per test.
nlohmann::json base_config() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 256, "intermediate_size": 384, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1024,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "max_position_embeddings": 512,
    "tie_word_embeddings": false, "rope_scaling": null})");
}

amk::Result<amk::schedule::ModelConfig> parse(const nlohmann::json& j) {
  return model_config_from_json_text(j.dump(), "cfg.json");
}

}  // namespace

TEST_CASE("model config: the tiny fixture (transformers 5.x rope_parameters spelling)", "[schedule]") {
  auto m = model_config_load(kSrc + "/tests/fixtures/tiny_llama/config.json");
  REQUIRE(m.is_ok());
  CHECK(m->name == "tiny_llama");
  CHECK(m->hidden_size == 256);
  CHECK(m->intermediate_size == 256);
  CHECK(m->num_hidden_layers == 4);
  CHECK(m->num_attention_heads == 8);
  CHECK(m->num_key_value_heads == 2);
  CHECK(m->head_dim == 32);
  CHECK(m->vocab_size == 1024);
  CHECK(m->rms_norm_eps == 1e-5);
  CHECK(m->rope_theta == 10000.0);
  CHECK(m->max_position_embeddings == 256);
  CHECK_FALSE(m->tie_word_embeddings);
  CHECK_FALSE(m->llama3_scaling.has_value());
  CHECK(m->gqa_group() == 4);
}

TEST_CASE("model config: the bundled public configs", "[schedule]") {
  auto one_b = model_config_load(kSrc + "/tests/fixtures/configs/llama-3.2-1b.json");
  REQUIRE(one_b.is_ok());
  CHECK(one_b->name == "llama-3.2-1b");
  CHECK(one_b->tie_word_embeddings);
  CHECK(one_b->head_dim == 64);
  CHECK(one_b->rope_theta == 500000.0);
  REQUIRE(one_b->llama3_scaling.has_value());
  CHECK(one_b->llama3_scaling->factor == 32.0);
  CHECK(one_b->llama3_scaling->low_freq_factor == 1.0);
  CHECK(one_b->llama3_scaling->high_freq_factor == 4.0);
  CHECK(one_b->llama3_scaling->original_max_position_embeddings == 8192);

  auto eight_b = model_config_load(kSrc + "/tests/fixtures/configs/llama-3-8b.json");
  REQUIRE(eight_b.is_ok());
  CHECK(eight_b->head_dim == 128);  // hidden / heads: the file has no head_dim
  CHECK_FALSE(eight_b->llama3_scaling.has_value());

  auto seventy_b = model_config_load(kSrc + "/tests/fixtures/configs/llama-3.1-70b.json");
  REQUIRE(seventy_b.is_ok());
  CHECK(seventy_b->num_hidden_layers == 80);
  REQUIRE(seventy_b->llama3_scaling.has_value());
  CHECK(seventy_b->llama3_scaling->factor == 8.0);

  auto tiny = model_config_load(kSrc + "/tests/fixtures/configs/tinyllama-1.1b.json");
  REQUIRE(tiny.is_ok());
  CHECK(tiny->num_key_value_heads == 4);
  auto smol = model_config_load(kSrc + "/tests/fixtures/configs/smollm-135m.json");
  REQUIRE(smol.is_ok());
  CHECK(smol->head_dim == 64);
  CHECK(smol->gqa_group() == 3);
  CHECK(smol->tie_word_embeddings);
}

TEST_CASE("model config: llama3 scaling in the transformers 5.x rope_parameters spelling", "[schedule]") {
  auto j = base_config();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}};
  auto m = parse(j);
  REQUIRE(m.is_ok());
  CHECK(m->rope_theta == 500000.0);
  REQUIRE(m->llama3_scaling.has_value());
  CHECK(m->llama3_scaling->factor == 8.0);

  SECTION("a top-level rope_theta that disagrees is an error naming the field") {
    j["rope_theta"] = 10000.0;
    auto bad = parse(j);
    REQUIRE_FALSE(bad.is_ok());
    CHECK_THAT(bad.status().message(), Contains("rope_parameters.rope_theta"));
  }
  SECTION("a missing llama3 parameter is named with its path") {
    j["rope_parameters"].erase("factor");
    auto bad = parse(j);
    REQUIRE_FALSE(bad.is_ok());
    CHECK(bad.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(bad.status().message(), Contains("rope_parameters.factor"));
  }
}

TEST_CASE("model config: defaults follow transformers' LlamaConfig", "[schedule]") {
  auto j = base_config();
  j.erase("num_key_value_heads");
  j.erase("tie_word_embeddings");
  j.erase("rope_theta");
  j.erase("rms_norm_eps");
  auto m = parse(j);
  REQUIRE(m.is_ok());
  CHECK(m->num_key_value_heads == 8);
  CHECK(m->head_dim == 32);
  CHECK_FALSE(m->tie_word_embeddings);
  CHECK(m->rope_theta == 10000.0);
  CHECK(m->rms_norm_eps == 1e-6);
  j["rope_scaling"] = {{"rope_type", "default"}};
  CHECK(parse(j).is_ok());
}

TEST_CASE("model config: unsupported RoPE types are refused by name", "[schedule]") {
  auto j = base_config();
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  auto linear = parse(j);
  REQUIRE_FALSE(linear.is_ok());
  CHECK(linear.status().code() == StatusCode::Unsupported);
  CHECK_THAT(linear.status().message(), Contains("rope_scaling.rope_type") && Contains("linear"));

  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};  // the older key spelling
  auto dynamic = parse(j);
  REQUIRE_FALSE(dynamic.is_ok());
  CHECK_THAT(dynamic.status().message(), Contains("rope_scaling.type") && Contains("dynamic"));

  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_theta", 10000.0}, {"rope_type", "yarn"}, {"factor", 4.0}};
  auto yarn = parse(j);
  REQUIRE_FALSE(yarn.is_ok());
  CHECK_THAT(yarn.status().message(), Contains("rope_parameters.rope_type") && Contains("yarn"));
}

TEST_CASE("model config: non-Llama architectures are refused naming the field", "[schedule]") {
  auto j = base_config();
  j["model_type"] = "mistral";
  auto mistral = parse(j);
  REQUIRE_FALSE(mistral.is_ok());
  CHECK(mistral.status().code() == StatusCode::Unsupported);
  CHECK_THAT(mistral.status().message(), Contains("cfg.json: model_type") && Contains("mistral"));

  j = base_config();
  j["architectures"] = {"LlamaForSequenceClassification"};
  auto cls = parse(j);
  REQUIRE_FALSE(cls.is_ok());
  CHECK_THAT(cls.status().message(), Contains("architectures"));

  j = base_config();
  j["attention_bias"] = true;
  CHECK_THAT(parse(j).status().message(), Contains("attention_bias"));
  j = base_config();
  j["hidden_act"] = "gelu";
  CHECK_THAT(parse(j).status().message(), Contains("hidden_act"));
}

TEST_CASE("model config: missing, mistyped and inconsistent fields name the field", "[schedule]") {
  auto expect_error = [](const nlohmann::json& j, const std::string& field) {
    auto r = parse(j);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(r.status().message(), Contains("cfg.json: " + field));
  };
  auto j = base_config();
  j.erase("hidden_size");
  expect_error(j, "hidden_size");
  j = base_config();
  j["vocab_size"] = "1024";
  expect_error(j, "vocab_size");
  j = base_config();
  j["num_hidden_layers"] = 0;
  expect_error(j, "num_hidden_layers");
  j = base_config();
  j["intermediate_size"] = 384.5;
  expect_error(j, "intermediate_size");
  j = base_config();
  j["num_key_value_heads"] = 3;
  expect_error(j, "num_key_value_heads");
  j = base_config();
  j["head_dim"] = 33;
  expect_error(j, "head_dim");
  j = base_config();
  j["rms_norm_eps"] = -1.0;
  expect_error(j, "rms_norm_eps");
  j = base_config();
  j.erase("model_type");
  expect_error(j, "model_type");

  auto broken = model_config_from_json_text("{\"hidden_size\": ", "cfg.json");
  REQUIRE_FALSE(broken.is_ok());
  CHECK(broken.status().code() == StatusCode::ParseError);
  auto missing = model_config_load("/nonexistent/config.json");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::IoError);
}
