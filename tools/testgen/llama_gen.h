// tools/testgen/llama_gen.h: a generator of Llama-shaped decode-step programs that are VALID under
// docs/VALIDATION.md and docs/OPCODES.md, at any size (10 to 1,000,000+ tasks), for benchmarks and
// tests. Per layer: RMSNORM -> q/k/v GEMV tiles -> ROPE (q, k) -> KV_APPEND (k, v) -> per-head
// ATTENTION_TILE -> o-proj tiles as FUSED GEMV_ADD in place into the residual h -> RMSNORM ->
// gate/up GEMV tiles -> SILU_MUL -> down tiles as FUSED GEMV_ADD into h. Every stage signals one
// counter and the next stage waits for all of it (all-join). Tasks are emitted in topological
// order and, when the target has SMs, assigned to them round-robin in that order.
#pragma once
#include <cstdint>

#include "ir/program.h"

namespace amk::testgen {

/// Model and tiling shape. Defaults: Llama-3-8B (GQA 32/8 heads, head_dim 128).
struct LlamaShape {
  int64_t hidden = 4096;
  int64_t n_heads = 32;
  int64_t n_kv_heads = 8;
  int64_t head_dim = 128;
  int64_t ffn = 14336;
  int64_t vocab = 128256;
  int64_t layers = 32;
  int64_t max_seq = 4096;  ///< KV cache rows
  int64_t pos = 127;       ///< the decode position of this step (kv_len = pos + 1)
  int64_t n_tile = 64;     ///< output columns per GEMV tile (the last tile of a row may be narrower)
  double eps = 1e-5;
  double theta = 500000.0;
};

/// Tasks per transformer layer for `shape`.
int64_t llama_tasks_per_layer(const LlamaShape& shape);
/// Tasks of `shape`: embedding, layers, final norm, LM head tiles and argmax.
int64_t llama_task_count(const LlamaShape& shape);
/// A default-model shape with about `tasks` tasks: the widest tile in {256..16} that reaches it
/// with 32 layers, then the layer count adjusted to land near it (at least one layer).
LlamaShape llama_shape_for_tasks(int64_t tasks);

/// The program. `target` is embedded (meta.gpu = target.name); its num_sms > 0 assigns SMs
/// round-robin, num_sms == 0 leaves every task unassigned.
ir::Program llama_program(const LlamaShape& shape, const ir::GpuTarget& target);

}  // namespace amk::testgen
