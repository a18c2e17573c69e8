// tools/bench/cublas_baseline.h: the baseline `amk-bench decode` compares amk's megakernel with: a
// batch-1 Llama decode step written the conventional way (one cuBLAS GEMV per projection, a few
// small kernels for norm / rope / attention / argmax), captured once into a CUDA graph. pos and the
// token live in device memory, so the one graph serves every step. Numerics follow amk's bf16
// lowering: bf16 weights, activations and KV cache, fp32 accumulation, fp32 logits.
// Host-only header: no CUDA types leak out (the implementation is behind a pointer).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/status.h"

namespace amk::bench {

/// The Llama shape the baseline is built for (HF config names in comments).
struct LlamaShape {
  int64_t hidden = 0;        ///< hidden_size
  int64_t n_layers = 0;      ///< num_hidden_layers
  int64_t n_heads = 0;       ///< num_attention_heads
  int64_t n_kv_heads = 0;    ///< num_key_value_heads (divides n_heads)
  int64_t head_dim = 0;      ///< even, <= kBaselineMaxHeadDim
  int64_t intermediate = 0;  ///< intermediate_size
  int64_t vocab = 0;         ///< vocab_size
  int64_t max_seq = 0;       ///< KV cache rows (positions 0..max_seq-1)
  float rms_eps = 1e-6f;     ///< rms_norm_eps
};

/// Largest head_dim the attention kernel keeps in registers.
inline constexpr int64_t kBaselineMaxHeadDim = 256;

/// One decoder layer's weights: device pointers to bf16 tensors in HF layout ([out, in] row-major).
struct LayerWeights {
  const void* attn_norm = nullptr;  ///< input_layernorm [hidden]
  const void* q = nullptr;          ///< q_proj [n_heads*head_dim, hidden]
  const void* k = nullptr;          ///< k_proj [n_kv_heads*head_dim, hidden]
  const void* v = nullptr;          ///< v_proj [n_kv_heads*head_dim, hidden]
  const void* o = nullptr;          ///< o_proj [hidden, n_heads*head_dim]
  const void* mlp_norm = nullptr;   ///< post_attention_layernorm [hidden]
  const void* gate = nullptr;       ///< gate_proj [intermediate, hidden]
  const void* up = nullptr;         ///< up_proj [intermediate, hidden]
  const void* down = nullptr;       ///< down_proj [hidden, intermediate]
};

/// The whole model (device pointers; the caller keeps them alive as long as the baseline).
struct ModelWeights {
  const void* embed = nullptr;       ///< embed_tokens [vocab, hidden], bf16
  const void* final_norm = nullptr;  ///< model.norm [hidden], bf16
  const void* lm_head = nullptr;     ///< [vocab, hidden], bf16 (== embed when tied)
  std::vector<LayerWeights> layers;  ///< n_layers entries
  const float* rope_inv_freq = nullptr;  ///< [head_dim/2] fp32: amk's synthesized table, so rope matches
};

/// A graphed cuBLAS decode step with its own activations and bf16 KV caches.
class CublasGraphBaseline {
 public:
  /// Check the shape and pointers, allocate, create a stream and a cuBLAS handle, run one eager
  /// step (warms cuBLAS up outside the capture) and capture ONE graph of a whole decode step.
  /// InvalidArgument names the bad field; GpuRuntime names the failed call.
  [[nodiscard]] static Status create(const LlamaShape& shape, const ModelWeights& weights,
                                     std::unique_ptr<CublasGraphBaseline>* out);
  ~CublasGraphBaseline();
  CublasGraphBaseline(const CublasGraphBaseline&) = delete;
  CublasGraphBaseline& operator=(const CublasGraphBaseline&) = delete;

  /// Decode `token` at `pos` (appends KV row pos; attends over rows [0, pos]); returns the argmax
  /// (lowest index on ties, NaN never wins). Synchronous.
  [[nodiscard]] Status step(int32_t token, int32_t pos, int32_t* next_token);
  /// Replay the step `iters` times back to back at the same (token, pos) and return each replay's
  /// GPU time in ms (CUDA events between consecutive replays; no host round trip between them).
  /// Rewriting KV row pos each time is harmless. Call after the caller's own warm-up.
  [[nodiscard]] Status time_steps(int32_t token, int32_t pos, int iters, std::vector<double>* ms);
  /// fp32 logits [vocab] of the last step or replay.
  [[nodiscard]] Status read_logits(std::vector<float>* out);

 private:
  struct Impl;  ///< CUDA state (cublas_baseline.cu)
  explicit CublasGraphBaseline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace amk::bench
