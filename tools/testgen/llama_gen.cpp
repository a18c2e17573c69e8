// tools/testgen/llama_gen.cpp: builds Llama-shaped decode programs stage by stage.
// Validity argument (docs/VALIDATION.md): tasks are emitted in dependency order and every wait is
// an all-join on the previous stage's counter, so the happens-before graph is a chain of stages;
// each activation is written by one stage and read only by later stages before its next writer;
// the residual h is updated in place tile by tile (FUSED GEMV_ADD reads and writes the same
// columns), ordered after the stage that last read it whole (RMSNORM); SM queues follow emission
// order, so no queue holds a task ahead of one it waits for.
#include "tools/testgen/llama_gen.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/opspec.h"

namespace amk::testgen {
namespace {

using ir::BufferId;
using ir::BufferKind;
using ir::CounterId;
using ir::DType;
using ir::MemSpace;
using ir::Opcode;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Builder {
 public:
  Builder(const LlamaShape& s, const ir::GpuTarget& t) : s_(s) {
    p_.target = t;
    p_.meta["model"] = "llama-shaped-synthetic";
    p_.meta["gpu"] = t.name;
    p_.meta["generator"] = "amk_testgen llama_program";
    p_.meta["layers"] = s.layers;
    ir::ScheduleConfig cfg;
    cfg.tiling["gemv"]["N_tile"] = s.n_tile;
    cfg.sm_assignment = std::string("round_robin");
    cfg.page_allocation = "none";
    p_.config = cfg;
    p_.tasks.reserve(static_cast<size_t>(llama_task_count(s)));
    num_sms_ = t.num_sms;
  }

  BufferId buffer(std::string name, BufferKind kind, DType dtype, std::vector<int64_t> shape,
                  std::string source = "") {
    ir::Buffer b;
    b.id = BufferId(static_cast<int32_t>(p_.buffers.size()));
    b.name = std::move(name);
    b.kind = kind;
    b.dtype = dtype;
    b.shape = std::move(shape);
    b.space = kind == BufferKind::Activation ? MemSpace::GlobalScratch : MemSpace::Hbm;
    if (!source.empty()) b.source = std::move(source);
    p_.buffers.push_back(std::move(b));
    return p_.buffers.back().id;
  }
  BufferId weight(std::string name, std::vector<int64_t> shape) {
    std::string source = name + ".weight";
    return buffer(std::move(name), BufferKind::Weight, DType::BF16, std::move(shape), std::move(source));
  }
  BufferId activation(std::string name, int64_t cols) {
    return buffer(std::move(name), BufferKind::Activation, DType::F32, {1, cols});
  }

  CounterId counter(std::string note) {
    ir::Counter c;
    c.id = CounterId(static_cast<int32_t>(p_.counters.size()));
    c.note = std::move(note);
    p_.counters.push_back(std::move(c));
    producers_.push_back(0);
    return p_.counters.back().id;
  }

  /// Append a task that waits for every producer of `after` (none when `after` is invalid).
  ir::Task& task(Opcode op, std::vector<BufferId> in, BufferId out, CounterId signal, CounterId after,
                 std::string label) {
    ir::Task t;
    t.id = ir::TaskId(static_cast<int32_t>(p_.tasks.size()));
    t.op = op;
    t.inputs = std::move(in);
    t.outputs = {out};
    t.out_counter = signal;
    if (after.value >= 0) t.waits.push_back({after, producers_[static_cast<size_t>(after.value)]});
    if (num_sms_ > 0) t.sm = static_cast<int32_t>(t.id.value % num_sms_);
    t.label = std::move(label);
    ++producers_[static_cast<size_t>(signal.value)];
    p_.tasks.push_back(std::move(t));
    return p_.tasks.back();
  }

  /// y[:, n_off:n_off+N_tile] = x @ W[n_off:...].T for every tile of W's `cols` rows; with a
  /// residual, FUSED GEMV_ADD in place: y is the residual buffer.
  void gemv_tiles(const std::string& label, BufferId x, BufferId w, BufferId y, int64_t k, int64_t cols,
                  CounterId signal, CounterId after, bool residual) {
    for (int64_t off = 0; off < cols; off += s_.n_tile) {
      const int64_t n = std::min(s_.n_tile, cols - off);
      std::vector<BufferId> in = {x, w};
      if (residual) in.push_back(y);
      ir::Task& t = task(residual ? Opcode::Fused : Opcode::GemvTile, std::move(in), y, signal, after,
                         label + "[" + std::to_string(off) + "]");
      if (residual) t.params.set("recipe", std::string("GEMV_ADD"));
      t.params.set("K", k);
      t.params.set("N_tile", n);
      t.params.set("n_off", off);
      if (residual)
        t.params.set("flags", static_cast<int64_t>(ir::FusedRecipe::GemvAdd) << ir::kFlagRecipeShift);
      t.est_bytes = n * k * 2;  // bf16 weight tile
      t.est_flops = 2 * n * k;
    }
  }

  ir::Program finish() { return std::move(p_); }

 private:
  const LlamaShape& s_;
  ir::Program p_;
  std::vector<int64_t> producers_;  ///< tasks signalling each counter so far
  int64_t num_sms_ = 0;
};

}  // namespace

int64_t llama_tasks_per_layer(const LlamaShape& s) {
  const int64_t t = s.n_tile;
  const int64_t q = s.n_heads * s.head_dim, kv = s.n_kv_heads * s.head_dim;
  return 1 + ceil_div(q, t) + 2 * ceil_div(kv, t)    // rmsnorm, q/k/v tiles
         + 2 + 2 + s.n_heads                          // rope q/k, kv_append k/v, attention per head
         + ceil_div(s.hidden, t)                      // o-proj
         + 1 + 2 * ceil_div(s.ffn, t) + 1             // rmsnorm, gate/up tiles, silu_mul
         + ceil_div(s.hidden, t);                     // down
}

int64_t llama_task_count(const LlamaShape& s) {
  return 1 + s.layers * llama_tasks_per_layer(s) + 1 + ceil_div(s.vocab, s.n_tile) + 1;
}

LlamaShape llama_shape_for_tasks(int64_t tasks) {
  LlamaShape s;
  for (int64_t tile : {256, 128, 64, 32, 16}) {
    s.n_tile = tile;
    if (llama_task_count(s) >= tasks) break;
  }
  s.layers = 0;
  const int64_t fixed = llama_task_count(s);
  const int64_t per_layer = llama_tasks_per_layer(s);
  s.layers = std::max<int64_t>(1, (tasks - fixed + per_layer / 2) / per_layer);
  return s;
}

ir::Program llama_program(const LlamaShape& s, const ir::GpuTarget& target) {
  Builder b(s, target);
  const int64_t H = s.hidden, F = s.ffn, V = s.vocab;
  const int64_t q_cols = s.n_heads * s.head_dim, kv_cols = s.n_kv_heads * s.head_dim;
  const CounterId none;

  // Buffers shared by all layers: activations are rewritten layer after layer.
  const BufferId ids = b.buffer("token_ids", BufferKind::IoInput, DType::I32, {1});
  const BufferId embed = b.weight("model.embed_tokens", {V, H});
  const BufferId h = b.activation("h", H);
  const BufferId xn = b.activation("x_norm", H);
  const BufferId q = b.activation("q", q_cols);
  const BufferId k = b.activation("k", kv_cols);
  const BufferId v = b.activation("v", kv_cols);
  const BufferId q_rot = b.activation("q_rot", q_cols);
  const BufferId k_rot = b.activation("k_rot", kv_cols);
  const BufferId attn = b.activation("attn", q_cols);
  const BufferId gate = b.activation("gate", F);
  const BufferId up = b.activation("up", F);
  const BufferId act = b.activation("act", F);
  const BufferId inv_freq =
      b.buffer("rope.inv_freq", BufferKind::Const, DType::F32, {s.head_dim / 2}, "model.rotary_emb.inv_freq");
  const BufferId final_norm = b.weight("model.norm", {H});
  const BufferId lm_head = b.weight("lm_head", {V, H});
  const BufferId logits = b.activation("logits", V);
  const BufferId token = b.buffer("next_token", BufferKind::IoOutput, DType::I32, {1});

  CounterId prev = b.counter("embedding done");
  b.task(Opcode::Embed, {ids, embed}, h, prev, none, "embed").params.set("hidden", H);

  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string L = "L" + std::to_string(l) + ".";
    const std::string P = "model.layers." + std::to_string(l) + ".";
    const BufferId attn_norm = b.weight(P + "input_layernorm", {H});
    const BufferId wq = b.weight(P + "self_attn.q_proj", {q_cols, H});
    const BufferId wk = b.weight(P + "self_attn.k_proj", {kv_cols, H});
    const BufferId wv = b.weight(P + "self_attn.v_proj", {kv_cols, H});
    const BufferId wo = b.weight(P + "self_attn.o_proj", {H, q_cols});
    const BufferId ffn_norm = b.weight(P + "post_attention_layernorm", {H});
    const BufferId wg = b.weight(P + "mlp.gate_proj", {F, H});
    const BufferId wu = b.weight(P + "mlp.up_proj", {F, H});
    const BufferId wd = b.weight(P + "mlp.down_proj", {H, F});
    const BufferId k_cache = b.buffer(L + "k_cache", BufferKind::KvCache, DType::BF16, {s.max_seq, kv_cols});
    const BufferId v_cache = b.buffer(L + "v_cache", BufferKind::KvCache, DType::BF16, {s.max_seq, kv_cols});

    const CounterId c_norm1 = b.counter(L + "attn rmsnorm done");
    ir::Task& n1 = b.task(Opcode::RmsNorm, {h, attn_norm}, xn, c_norm1, prev, L + "attn_norm");
    n1.params.set("eps", s.eps);
    n1.params.set("hidden", H);

    const CounterId c_qkv = b.counter(L + "q/k/v tiles done");
    b.gemv_tiles(L + "q", xn, wq, q, H, q_cols, c_qkv, c_norm1, false);
    b.gemv_tiles(L + "k", xn, wk, k, H, kv_cols, c_qkv, c_norm1, false);
    b.gemv_tiles(L + "v", xn, wv, v, H, kv_cols, c_qkv, c_norm1, false);

    const CounterId c_rope = b.counter(L + "rope done");
    for (auto [x, y, name] : {std::tuple{q, q_rot, "rope_q"}, std::tuple{k, k_rot, "rope_k"}}) {
      ir::Task& t = b.task(Opcode::Rope, {x, inv_freq}, y, c_rope, c_qkv, L + name);
      t.params.set("head_dim", s.head_dim);
      t.params.set("theta", s.theta);
      t.params.set("pos", s.pos);
    }

    const CounterId c_kv = b.counter(L + "kv append done");
    b.task(Opcode::KvAppend, {k_rot, k_cache}, k_cache, c_kv, c_rope, L + "append_k").params.set("pos", s.pos);
    b.task(Opcode::KvAppend, {v, v_cache}, v_cache, c_kv, c_rope, L + "append_v").params.set("pos", s.pos);

    const CounterId c_attn = b.counter(L + "attention done");
    for (int64_t head = 0; head < s.n_heads; ++head) {
      ir::Task& t = b.task(Opcode::AttentionTile, {q_rot, k_cache, v_cache}, attn, c_attn, c_kv,
                           L + "attn[" + std::to_string(head) + "]");
      t.params.set("head_dim", s.head_dim);
      t.params.set("kv_start", int64_t{0});
      t.params.set("kv_len", s.pos + 1);
      t.params.set("scale", 1.0 / std::sqrt(static_cast<double>(s.head_dim)));
      t.params.set("n_heads", s.n_heads);
      t.params.set("n_kv_heads", s.n_kv_heads);
      t.params.set("n_off", head);
      t.params.set("N_tile", int64_t{1});
    }

    const CounterId c_o = b.counter(L + "o-proj + residual done");
    b.gemv_tiles(L + "o", attn, wo, h, q_cols, H, c_o, c_attn, true);

    const CounterId c_norm2 = b.counter(L + "ffn rmsnorm done");
    ir::Task& n2 = b.task(Opcode::RmsNorm, {h, ffn_norm}, xn, c_norm2, c_o, L + "ffn_norm");
    n2.params.set("eps", s.eps);
    n2.params.set("hidden", H);

    const CounterId c_gu = b.counter(L + "gate/up tiles done");
    b.gemv_tiles(L + "gate", xn, wg, gate, H, F, c_gu, c_norm2, false);
    b.gemv_tiles(L + "up", xn, wu, up, H, F, c_gu, c_norm2, false);

    const CounterId c_act = b.counter(L + "silu_mul done");
    b.task(Opcode::SiluMul, {gate, up}, act, c_act, c_gu, L + "silu_mul");

    const CounterId c_down = b.counter(L + "down-proj + residual done");
    b.gemv_tiles(L + "down", act, wd, h, F, H, c_down, c_act, true);
    prev = c_down;
  }

  const CounterId c_norm = b.counter("final rmsnorm done");
  ir::Task& n = b.task(Opcode::RmsNorm, {h, final_norm}, xn, c_norm, prev, "final_norm");
  n.params.set("eps", s.eps);
  n.params.set("hidden", H);
  const CounterId c_lm = b.counter("lm head tiles done");
  b.gemv_tiles("lm_head", xn, lm_head, logits, H, V, c_lm, c_norm, false);
  const CounterId c_tok = b.counter("argmax done");
  b.task(Opcode::SampleArgmax, {logits}, token, c_tok, c_lm, "argmax");
  return b.finish();
}

}  // namespace amk::testgen
