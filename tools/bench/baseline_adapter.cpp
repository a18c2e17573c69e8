// tools/bench/baseline_adapter.cpp: see baseline_adapter.h. Maps an amk program's WEIGHT buffers
// (by their Hugging Face `source` names, docs/SCHEDULE.md) and its synthesized rope table to the
// cuBLAS baseline's ModelWeights, using the GPU executor's device copies: one set of weights in
// device memory, read by both decoders.
#include "tools/bench/baseline_adapter.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tools/bench/cublas_baseline.h"
#include "tools/bench/destack_weights.h"
#include "vm/cuda/cuda_executor.h"

namespace amk::bench {
namespace {

class CublasAdapter final : public DecodeBaseline {
 public:
  CublasAdapter(std::unique_ptr<CublasGraphBaseline> b, std::unique_ptr<DestackedWeights> copies)
      : copies_(std::move(copies)), b_(std::move(b)) {}

  Status step(int32_t token, int32_t pos, int32_t amk_token, const std::vector<float>& amk_logits,
              Comparison* out) override {
    Status s = b_->step(token, pos, &out->next);
    if (!s) return s;
    std::vector<float> logits;
    s = b_->read_logits(&logits);
    if (!s) return s;
    if (logits.size() != amk_logits.size())
      return Status(StatusCode::Internal, "baseline logits have " + std::to_string(logits.size()) + " entries, amk's " +
                                              std::to_string(amk_logits.size()));
    double diff2 = 0.0, ref2 = 0.0;
    out->max_abs_diff = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const double d = static_cast<double>(amk_logits[i]) - logits[i];
      out->max_abs_diff = std::max(out->max_abs_diff, std::fabs(d));
      diff2 += d * d;
      ref2 += static_cast<double>(logits[i]) * logits[i];
    }
    out->rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : 0.0;
    out->agree = out->next == amk_token;
    out->within_noise = false;
    if (!out->agree && amk_token >= 0 && static_cast<size_t>(amk_token) < logits.size() && out->next >= 0) {
      const double gap = static_cast<double>(logits[static_cast<size_t>(out->next)]) - logits[static_cast<size_t>(amk_token)];
      out->within_noise = std::isfinite(gap) && gap <= 2.0 * out->max_abs_diff;
    }
    return Status::ok();
  }

  Status time_steps(int32_t token, int32_t pos, int warmup, int iters, std::vector<double>* ms) override {
    std::vector<double> ignored;
    if (warmup > 0) {
      Status s = b_->time_steps(token, pos, warmup, &ignored);
      if (!s) return s;
    }
    return b_->time_steps(token, pos, iters, ms);
  }

 private:
  std::unique_ptr<DestackedWeights> copies_;  // weights b_ reads: declared first, so freed after it
  std::unique_ptr<CublasGraphBaseline> b_;
};

/// source name -> device pointer of that WEIGHT/CONST buffer. Stacked and row-permuted buffers are
/// not listed: the baseline's kernels read each tensor as its own contiguous matrix in the model's
/// row order.
std::map<std::string, const void*> device_sources(const ir::Program& program, const vm::Executor& exec) {
  std::map<std::string, const void*> out;
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ir::Buffer& b = program.buffers[i];
    if (b.source && b.rope_pairs == 0) out[*b.source] = vm::gpu_device_buffer(exec, static_cast<int32_t>(i));
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<DecodeBaseline>> make_baseline(const std::string& name, const schedule::ModelConfig& model,
                                                     const ir::Program& program, const vm::Executor& exec,
                                                     int64_t max_seq) {
  if (name != "cublas-graph")
    return Status(StatusCode::InvalidArgument, "--baseline: unknown baseline '" + name + "' (cublas-graph, none)");
  for (const ir::Buffer& b : program.buffers)
    if (b.kind == ir::BufferKind::Weight && b.dtype != ir::DType::BF16)
      return Status(StatusCode::InvalidArgument, "the cublas-graph baseline needs bf16 weights; buffer " + b.name + " is " +
                                                     std::string(ir::dtype_name(b.dtype)));
  const auto src = device_sources(program, exec);
  // A tensor the program holds only inside a stacked buffer (the MLP fold's [I, 3, H]) gets a
  // device copy of its own, taken from that buffer: the baseline's kernels read each tensor as a
  // contiguous matrix, and the copy holds exactly the numbers amk's buffer does.
  struct StackedPart {
    size_t buffer;
    int64_t part;
    bool transpose;
  };
  std::map<std::string, StackedPart> stacked_in;
  for (size_t i = 0; i < program.buffers.size(); ++i)
    for (size_t p = 0; p < program.buffers[i].stack.size(); ++p)
      stacked_in.emplace(program.buffers[i].stack[p].source,
                         StackedPart{i, static_cast<int64_t>(p), program.buffers[i].stack[p].transpose});
  // A tensor held in rope-pair row order (the rope-in-qkv program's W_q, W_k) gets a copy in the
  // model's order, from amk's own buffer.
  std::map<std::string, size_t> permuted_in;
  for (size_t i = 0; i < program.buffers.size(); ++i)
    if (program.buffers[i].source && program.buffers[i].rope_pairs != 0) permuted_in.emplace(*program.buffers[i].source, i);
  auto copies = std::make_unique<DestackedWeights>();
  std::string missing;
  Status copy_error = Status::ok();
  const auto need = [&](const std::string& key) -> const void* {
    const auto it = src.find(key);
    if (it != src.end() && it->second != nullptr) return it->second;
    const auto pe = permuted_in.find(key);
    if (pe != permuted_in.end() && copy_error) {
      const ir::Buffer& b = program.buffers[pe->second];
      const void* out = nullptr;
      copy_error = copies->unpermuted(vm::gpu_device_buffer(exec, static_cast<int32_t>(pe->second)), b.shape[0],
                                      b.shape[1], b.rope_pairs, &out);
      if (copy_error) return out;
    }
    const auto st = stacked_in.find(key);
    if (st != stacked_in.end() && copy_error) {
      const ir::Buffer& b = program.buffers[st->second.buffer];
      const void* out = nullptr;
      copy_error = copies->part(vm::gpu_device_buffer(exec, static_cast<int32_t>(st->second.buffer)), b.shape[0],
                                b.shape[1], b.shape[2], st->second.part, st->second.transpose, &out);
      if (copy_error) return out;
    }
    missing += (missing.empty() ? "" : ", ") + key;
    return nullptr;
  };
  ModelWeights w;
  w.embed = need("model.embed_tokens.weight");
  w.final_norm = need("model.norm.weight");
  w.lm_head = model.tie_word_embeddings ? w.embed : need("lm_head.weight");
  for (int64_t l = 0; l < model.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.attn_norm = need(p + "input_layernorm.weight");
    lw.q = need(p + "self_attn.q_proj.weight");
    lw.k = need(p + "self_attn.k_proj.weight");
    lw.v = need(p + "self_attn.v_proj.weight");
    lw.o = need(p + "self_attn.o_proj.weight");
    lw.mlp_norm = need(p + "post_attention_layernorm.weight");
    lw.gate = need(p + "mlp.gate_proj.weight");
    lw.up = need(p + "mlp.up_proj.weight");
    lw.down = need(p + "mlp.down_proj.weight");
    w.layers.push_back(lw);
  }
  for (const auto& [key, ptr] : src)
    if (key.rfind("amk:rope_inv_freq", 0) == 0) w.rope_inv_freq = static_cast<const float*>(ptr);
  if (w.rope_inv_freq == nullptr) missing += std::string(missing.empty() ? "" : ", ") + "amk:rope_inv_freq";
  if (!copy_error) return copy_error;
  if (!missing.empty())
    return Status(StatusCode::InvalidArgument, "the program lacks buffers the baseline needs: " + missing);

  LlamaShape shape;
  shape.hidden = model.hidden_size;
  shape.n_layers = model.num_hidden_layers;
  shape.n_heads = model.num_attention_heads;
  shape.n_kv_heads = model.num_key_value_heads;
  shape.head_dim = model.head_dim;
  shape.intermediate = model.intermediate_size;
  shape.vocab = model.vocab_size;
  shape.max_seq = max_seq;
  shape.rms_eps = static_cast<float>(model.rms_norm_eps);
  std::unique_ptr<CublasGraphBaseline> b;
  Status s = CublasGraphBaseline::create(shape, w, &b);
  if (!s) return s;
  return std::unique_ptr<DecodeBaseline>(std::make_unique<CublasAdapter>(std::move(b), std::move(copies)));
}

}  // namespace amk::bench
