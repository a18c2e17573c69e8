// schedule/cost.cpp: per-opcode byte and flop estimates (see cost.h for what they count).
#include "schedule/cost.h"

namespace amk::schedule {
namespace {

int64_t nb(ir::DType d, int64_t n) { return ir::dtype_nbytes(d, n); }

}  // namespace

Cost cost_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y) {
  return Cost{nb(w, n * K) + nb(x, K) + nb(y, n), 2 * K * n};
}

Cost cost_rmsnorm_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y) {
  Cost c = cost_gemv(K, n, w, x, y);
  c.bytes += nb(w, K);  // the norm weight
  c.flops += 4 * K;     // square, sum, scale, weight
  return c;
}

Cost cost_mlp_fold(int64_t K, int64_t n, ir::DType w) {
  Cost c;
  c.bytes = nb(w, 3 * n * K) + nb(ir::DType::F32, K) + nb(w, K) + 2 * nb(ir::DType::F32, K);
  c.flops = 6 * n * K + 4 * K + 6 * n + K;  // 3 n K multiply-adds, the norm, silu * up, the adds
  return c;
}

Cost cost_silu_mul_gemv(int64_t K, int64_t n, ir::DType w, ir::DType x, ir::DType y) {
  Cost c = cost_gemv(K, n, w, x, y);
  c.bytes += nb(x, K);  // up as well as gate
  c.flops += 5 * K;     // exp, add, divide, two multiplies
  return c;
}

Cost cost_residual(int64_t n, ir::DType y) { return Cost{nb(y, n), n}; }

Cost cost_rmsnorm(int64_t H, ir::DType x, ir::DType w) { return Cost{2 * nb(x, H) + nb(w, H), 4 * H}; }

Cost cost_rope(int64_t elems, int64_t head_dim, ir::DType x) {
  return Cost{2 * nb(x, elems) + nb(ir::DType::F32, head_dim / 2), 6 * elems};
}

Cost cost_kv_append(int64_t elems, ir::DType kv) { return Cost{2 * nb(kv, elems), 0}; }

Cost cost_attention(int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim, ir::DType kv,
                    int64_t out_width, ir::DType out) {
  const int64_t kv_bytes = 2 * kv_heads * nb(kv, kv_len * head_dim);  // K and V rows
  const int64_t q_bytes = nb(kv, heads * head_dim);
  // q.k and p.v are head_dim multiply-adds per row and head each; the softmax is ~5 per row.
  return Cost{kv_bytes + q_bytes + nb(out, heads * out_width), heads * kv_len * (4 * head_dim + 5)};
}

Cost cost_attention_gemv_add(int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim, int64_t n,
                             ir::DType kv, ir::DType w, ir::DType y) {
  // The attention's reads; its output never leaves the SM (out_width 0).
  Cost c = cost_attention(heads, kv_heads, kv_len, head_dim, kv, 0, kv);
  c.bytes += 2 * nb(kv, kv_heads * head_dim) + nb(ir::DType::F32, head_dim / 2);  // k_new, v_new, inv_freq
  c.flops += 6 * (heads + kv_heads) * head_dim;  // q and the new k rotated, as cost_rope counts
  const int64_t K = heads * head_dim;
  c.bytes += nb(w, n * K) + 2 * nb(y, n);  // W_o's tile rows; the residual tile read and written
  c.flops += 2 * K * n + n;
  return c;
}

Cost cost_combine(int64_t P, int64_t heads, int64_t head_dim, ir::DType out) {
  return Cost{nb(ir::DType::F32, P * heads * (head_dim + 2)) + nb(out, heads * head_dim),
              P * heads * (2 * head_dim + 4)};
}

Cost cost_elementwise(int64_t n, int inputs, ir::DType d, int64_t flops_per) {
  return Cost{(inputs + 1) * nb(d, n), flops_per * n};
}

Cost cost_embed(int64_t H, ir::DType table, ir::DType y) {
  return Cost{nb(ir::DType::I32, 1) + nb(table, H) + nb(y, H), 0};
}

Cost cost_argmax(int64_t V, ir::DType logits) { return Cost{nb(logits, V) + nb(ir::DType::I32, 1), V}; }

Cost cost_argmax_combine(int64_t C, ir::DType logits) {
  return Cost{nb(ir::DType::I32, C) + nb(logits, C) + nb(ir::DType::I32, 1), C};
}

}  // namespace amk::schedule
