// schedule/cost.h: the cost model behind every task's est_bytes and est_flops (internal).
// est_bytes counts bytes a task moves to or from memory (weights + activations + KV rows read,
// outputs written); est_flops counts multiply-adds as 2. Decode is bandwidth-bound, so bytes are
// what load_balance balances; flops are a hint for tools. Attention assumes a full KV window
// (kv_len is the partition's capacity): the estimate is the worst step, not the average.
#pragma once
#include <cstdint>

#include "ir/enums.h"

namespace amk::schedule {

struct Cost {
  int64_t bytes = 0;
  int64_t flops = 0;
};

/// A GEMV tile: n outputs of a K-long dot product with W rows [n, K].
Cost cost_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y);
/// RMSNORM_GEMV: the tile also reads the norm weight and recomputes the norm of x.
Cost cost_rmsnorm_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y);
/// SILU_MUL_GEMV: the tile reads gate and up (K each) and recomputes silu(gate)*up.
Cost cost_silu_mul_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y);
/// RMSNORM_MLP_FOLD over n intermediate columns of a hidden size K: 3 n weight rows of K, x (F32)
/// and the norm weight read, K F32 atomic adds (a read and a write each).
Cost cost_mlp_fold(int64_t K, int64_t n, ir::DType w);
/// The residual epilogue of GEMV_ADD / SILU_MUL_GEMV_ADD: n more reads and adds.
Cost cost_residual(int64_t n, ir::DType y);
/// RMSNORM over H elements.
Cost cost_rmsnorm(int64_t H, ir::DType x, ir::DType w);
/// ROPE over `elems` elements (head_dim/2 F32 inv_freq entries).
Cost cost_rope(int64_t elems, int64_t head_dim, ir::DType x);
/// KV_APPEND of one `elems`-wide row.
Cost cost_kv_append(int64_t elems, ir::DType kv);
/// ATTENTION_TILE: `heads` query heads touching `kv_heads` K/V heads over `kv_len` rows, writing
/// `out_width` elements per head of dtype `out`.
Cost cost_attention(int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim, ir::DType kv,
                    int64_t out_width, ir::DType out);
/// FUSED ATTENTION_GEMV_ADD: the attention of all `heads` query heads (`kv_heads` K/V heads over
/// `kv_len` cache rows, q and the step's k rotated, the step's k / v rows read) kept on chip as the
/// x of an n-row GEMV_ADD tile of K = heads * head_dim. Every tile reads the whole K / V window
/// again (from L2 after the first): that re-read is the price of having no attention stage.
Cost cost_attention_gemv_add(int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim, int64_t n,
                             ir::DType kv, ir::DType w, ir::DType y);
/// ATTENTION_COMBINE of P F32 partials of `heads` x (head_dim + 2).
Cost cost_combine(int64_t P, int64_t heads, int64_t head_dim, ir::DType out);
/// An elementwise op with `inputs` inputs of n elements (ADD, SILU_MUL), `flops_per` each.
Cost cost_elementwise(int64_t n, int inputs, ir::DType d, int64_t flops_per);
/// EMBED of one H-wide row.
Cost cost_embed(int64_t H, ir::DType table, ir::DType y);
/// SAMPLE_ARGMAX over V logits (the whole scan, or a tile of V logits writing one candidate).
Cost cost_argmax(int64_t V, ir::DType logits);
/// A SAMPLE_ARGMAX combine over C candidates: each is an index and one gathered logit.
Cost cost_argmax_combine(int64_t C, ir::DType logits);

}  // namespace amk::schedule
