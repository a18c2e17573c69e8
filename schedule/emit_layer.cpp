// schedule/emit_layer.cpp: one Llama decoder layer as a chain of stages.
// Unfused, a layer is: attn_norm, qkv, rope (+ KV_APPEND v), kv_append (k), attention,
// [attn_combine], o_proj, attn_residual, mlp_norm, gate_up, silu_mul, down_proj, mlp_residual.
// Each fusion group removes stages (docs/SCHEDULE.md); fully fused a layer is 5 stages (6 with
// split-KV): qkv, attention (q rotated in it), [combine], o_proj (+ the cache appends), gate_up, down;
// with the attention in o_proj 4: qkv, attention_o_proj (+ the appends), gate_up, down. Tasks
// inside a stage never touch the same bytes: tiles write disjoint columns, and the in-place
// residual tiles read and write only their own columns of h (the appends write cache row pos,
// which the attention tasks of their stage take from k / v instead).
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>

#include "ir/opspec.h"
#include "schedule/cost.h"
#include "schedule/emit.h"

namespace amk::schedule {
namespace {

struct LayerWeights {
  ir::BufferId attn_norm, q, k, v, o, mlp_norm, gate, up, down;
  ir::BufferId mlp;  ///< the fold's stacked [I, 3, H]: gate, up and down_proj^T rows (docs/FOLD.md)
};

LayerWeights layer_weights(LowerContext& c, const std::string& P, int64_t layer) {
  const ModelConfig& m = c.model;
  const std::string src = "model.layers." + std::to_string(layer) + ".";
  const int64_t H = m.hidden_size, I = m.intermediate_size;
  LayerWeights w;
  w.attn_norm = c.weight(P + ".input_layernorm", {H}, src + "input_layernorm.weight");
  if (c.fusion.rope_qkv) {  // rows in rope-pair order: the tiles rotate adjacent outputs
    w.q = c.weight_rope_pairs(P + ".q_proj", {m.q_dim(), H}, src + "self_attn.q_proj.weight", m.head_dim);
    w.k = c.weight_rope_pairs(P + ".k_proj", {m.kv_dim(), H}, src + "self_attn.k_proj.weight", m.head_dim);
  } else {
    w.q = c.weight(P + ".q_proj", {m.q_dim(), H}, src + "self_attn.q_proj.weight");
    w.k = c.weight(P + ".k_proj", {m.kv_dim(), H}, src + "self_attn.k_proj.weight");
  }
  w.v = c.weight(P + ".v_proj", {m.kv_dim(), H}, src + "self_attn.v_proj.weight");
  w.o = c.weight(P + ".o_proj", {H, m.q_dim()}, src + "self_attn.o_proj.weight");
  w.mlp_norm = c.weight(P + ".post_attention_layernorm", {H}, src + "post_attention_layernorm.weight");
  if (c.fusion.mlp_fold) {
    w.mlp = c.weight_stack(P + ".mlp_fold", {I, 3, H},
                           {ir::StackPart{src + "mlp.gate_proj.weight", false}, ir::StackPart{src + "mlp.up_proj.weight", false},
                            ir::StackPart{src + "mlp.down_proj.weight", true}});
    return w;
  }
  w.gate = c.weight(P + ".gate_proj", {I, H}, src + "mlp.gate_proj.weight");
  w.up = c.weight(P + ".up_proj", {I, H}, src + "mlp.up_proj.weight");
  w.down = c.weight(P + ".down_proj", {H, I}, src + "mlp.down_proj.weight");
  return w;
}

// ROPE and KV_APPEND follow the decode position through STEP_POS (params.pos stays 0).
void emit_rope(LowerContext& c, const std::string& label, ir::BufferId x, ir::BufferId y) {
  const int64_t n = c.b.buffer(x).numel();
  ir::Params p;
  p.set("head_dim", c.model.head_dim);
  p.set("theta", c.model.rope_theta);
  p.set("pos", int64_t{0});
  p.set("flags", ir::kFlagStepPos);
  const Cost cost = cost_rope(n, c.model.head_dim, c.dtype);
  c.b.add_task(ir::Opcode::Rope, {x, c.inv_freq}, {y}, std::move(p), label, cost.bytes, cost.flops);
}

void emit_kv_append(LowerContext& c, const std::string& label, ir::BufferId x, ir::BufferId cache) {
  ir::Params p;
  p.set("pos", int64_t{0});
  p.set("flags", ir::kFlagStepPos);
  const Cost cost = cost_kv_append(c.b.buffer(x).numel(), c.dtype);
  c.b.add_task(ir::Opcode::KvAppend, {x, cache}, {cache}, std::move(p), label, cost.bytes, cost.flops);
}

// k rotated straight into row pos of its cache: ROPE then KV_APPEND as one FUSED ROPE_APPEND task
// (the kv_append stage disappears).
void emit_rope_append(LowerContext& c, const std::string& label, ir::BufferId x, ir::BufferId cache) {
  const int64_t n = c.b.buffer(x).numel();
  ir::Params p;
  p.set("recipe", std::string(ir::recipe_find(static_cast<int64_t>(ir::FusedRecipe::RopeAppend))->name));
  p.set("head_dim", c.model.head_dim);
  p.set("theta", c.model.rope_theta);
  p.set("pos", int64_t{0});
  p.set("flags", ir::kFlagStepPos | (static_cast<int64_t>(ir::FusedRecipe::RopeAppend) << ir::kFlagRecipeShift));
  // ROPE's traffic (x read, a row written, the inv_freq table): the row goes straight to the cache.
  const Cost cost = cost_rope(n, c.model.head_dim, c.dtype);
  c.b.add_task(ir::Opcode::Fused, {x, c.inv_freq, cache}, {cache}, std::move(p), label, cost.bytes, cost.flops);
}

// The step's k / v rows for FUSED ROPE_ATTENTION (unset: plain ATTENTION_TILE over a rotated q
// and caches that already hold row pos).
struct FreshRow {
  ir::BufferId k, v;
  bool on() const { return k.value >= 0; }
};

// Head groups x KV partitions. With P > 1 each partition writes F32 {acc, m, l} partials into
// its own buffer (past 8 partitions: row p / 8 of buffer p % 8, each stacking P / 8, TilingPlan::kv_rows)
// and ATTENTION_COMBINE tasks (next stage, one per head group) merge them into `out`.
void emit_attention(LowerContext& c, const std::string& P, ir::BufferId q, ir::BufferId k_cache,
                    ir::BufferId v_cache, ir::BufferId out, const FreshRow& fresh) {
  const ModelConfig& m = c.model;
  const int64_t hd = m.head_dim, parts = c.tiling.kv_partitions;
  const bool split = parts > 1;
  const int64_t rows = c.tiling.kv_rows(), operands = parts / rows, row = m.num_attention_heads * (hd + 2);
  std::vector<ir::BufferId> partials;
  for (int64_t b = 0; split && b < operands; ++b) {
    const std::string name = P + ".attn_partial" + std::to_string(b);
    partials.push_back(rows == 1 ? c.activation(name, row, ir::DType::F32)
                                 : c.b.add_buffer(name, ir::BufferKind::Activation, ir::DType::F32, {rows, row},
                                                  ir::MemSpace::GlobalScratch));
  }
  c.b.begin_stage(P + " attention");
  for (int64_t p = 0; p < parts; ++p) {
    const Span kv = c.tiling.kv_partition(p, c.max_seq);
    const int64_t kv_start = kv.off, kv_len = kv.len;
    for (const Span& heads : spans_cover(m.num_attention_heads, c.tiling.heads_per_task)) {
      const int64_t kv_heads = (heads.off + heads.len - 1) / m.gqa_group() - heads.off / m.gqa_group() + 1;
      const int64_t width = split ? hd + 2 : hd;
      ir::Params prm;
      prm.set("head_dim", hd);
      prm.set("kv_start", kv_start);
      prm.set("kv_len", kv_len);
      prm.set("scale", 1.0 / std::sqrt(static_cast<double>(hd)));
      prm.set("n_heads", m.num_attention_heads);
      prm.set("n_kv_heads", m.num_key_value_heads);
      prm.set("n_off", heads.off);
      prm.set("N_tile", heads.len);
      if (rows > 1) prm.set("m_off", p / operands);  // its row of the stacked partials
      int64_t flags = ir::kFlagStepKv | (split ? ir::kFlagPartialWrite : 0);
      Cost cost = cost_attention(heads.len, kv_heads, kv_len, hd, c.dtype, width, split ? ir::DType::F32 : c.dtype);
      std::vector<ir::BufferId> in{q, k_cache, v_cache};
      if (fresh.on()) {
        const auto recipe = static_cast<int64_t>(ir::FusedRecipe::RopeAttention);
        prm.set("recipe", std::string(ir::recipe_find(recipe)->name));
        prm.set("pos", int64_t{0});
        flags |= ir::kFlagStepPos | (recipe << ir::kFlagRecipeShift);
        in.insert(in.end(), {fresh.k, fresh.v, c.inv_freq});
        const Cost rope = cost_rope(heads.len * hd + kv_heads * hd, hd, c.dtype);  // q and the new k rotated
        cost.bytes += rope.bytes + ir::dtype_nbytes(c.dtype, kv_heads * hd);  // + the new v
        cost.flops += rope.flops;
      }
      prm.set("flags", flags);
      const std::string label = P + ".attention[h" + std::to_string(heads.off) + ":" +
                                std::to_string(heads.off + heads.len) + ",kv" + std::to_string(kv_start) + ":" +
                                std::to_string(kv_start + kv_len) + "]";
      c.b.add_task(fresh.on() ? ir::Opcode::Fused : ir::Opcode::AttentionTile, std::move(in),
                   {split ? partials[p % operands] : out}, std::move(prm), label, cost.bytes, cost.flops);
    }
  }
  if (!split) return;
  // One combine task per attention head group (n_off / N_tile), so the merge spreads over SMs
  // instead of one SM reading every partial of the layer; with stacked partials, groups of
  // heads_per_task / rows heads, so that a task merges as many (element, row) pairs as one row's
  // group has elements: one pass of its threads (16 partitions of 4 heads in groups of 4: the
  // combine took 6.5 us a task against 3.6, docs/PERFORMANCE.md row 128).
  c.b.begin_stage(P + " attn_combine");
  const int64_t combine_heads = std::max<int64_t>(1, c.tiling.heads_per_task / rows);
  for (const Span& heads : spans_cover(m.num_attention_heads, combine_heads)) {
    ir::Params prm;
    prm.set("head_dim", hd);
    prm.set("n_heads", m.num_attention_heads);
    prm.set("n_off", heads.off);
    prm.set("N_tile", heads.len);
    const Cost cost = cost_combine(parts, heads.len, hd, c.dtype);
    c.b.add_task(ir::Opcode::AttentionCombine, partials, {out}, std::move(prm),
                 P + ".attn_combine[h" + std::to_string(heads.off) + ":" + std::to_string(heads.off + heads.len) + "]",
                 cost.bytes, cost.flops);
  }
}

// FUSED ATTENTION_GEMV_ADD o_proj tiles (docs/ATTENTION_IN_O.md): each computes ROPE_ATTENTION's
// output over every head and the one cache window (STEP_KV clamps it to the step) on chip, as the
// x of GEMV_ADD's tile of W_o into h, in place. So they wait on q / k / v directly; the price is
// that every tile reads the whole K / V window, which is why the preset keeps this to short caches.
void emit_attention_o_proj(LowerContext& c, const std::string& P, ir::BufferId q, ir::BufferId k_cache,
                           ir::BufferId v_cache, const FreshRow& fresh, ir::BufferId w_o) {
  const ModelConfig& m = c.model;
  const int64_t hd = m.head_dim, K = m.q_dim();
  const Span kv = c.tiling.kv_partition(0, c.max_seq);  // the only partition (fusion_check_tiling)
  const auto recipe = static_cast<int64_t>(ir::FusedRecipe::AttentionGemvAdd);
  for (const Span& t : projection_spans(c.tiling, "o_proj", m.hidden_size)) {
    ir::Params p;  // ROPE_ATTENTION's params (no head range), then GEMV_ADD's tile
    p.set("recipe", std::string(ir::recipe_find(recipe)->name));
    p.set("head_dim", hd);
    p.set("kv_start", kv.off);
    p.set("kv_len", kv.len);
    p.set("scale", 1.0 / std::sqrt(static_cast<double>(hd)));
    p.set("n_heads", m.num_attention_heads);
    p.set("n_kv_heads", m.num_key_value_heads);
    p.set("pos", int64_t{0});
    p.set("K", K);
    p.set("N_tile", t.len);
    p.set("n_off", t.off);
    p.set("flags", ir::kFlagStepPos | ir::kFlagStepKv | (recipe << ir::kFlagRecipeShift));
    const Cost cost = cost_attention_gemv_add(m.num_attention_heads, m.num_key_value_heads, kv.len, hd, t.len, c.dtype,
                                              c.weight_dtype, c.b.buffer(c.h).dtype);
    c.b.add_task(ir::Opcode::Fused, {q, k_cache, v_cache, fresh.k, fresh.v, c.inv_freq, w_o, c.h}, {c.h},
                 std::move(p), P + ".o_proj[" + std::to_string(t.off) + ":" + std::to_string(t.off + t.len) + "]",
                 cost.bytes, cost.flops);
  }
}

// o_proj's tiles (GEMV_ADD into h, in place; plain GEMV_TILE plus an ADD stage without the
// o_residual group; GEMV_ADD_COPY with the fold). Returns the fold's copy of h (none without it).
ir::BufferId emit_o_proj(LowerContext& c, const std::string& P, const LayerWeights& w, ir::BufferId attn,
                         const std::function<void()>& beside) {
  const ModelConfig& m = c.model;
  const int64_t H = m.hidden_size;
  GemvJob oj{P + ".o_proj", "o_proj", GemvForm::Add, attn, ir::BufferId(), w.o, c.h, m.q_dim(), H};
  if (c.fusion.mlp_fold) {  // the MLP's input, which the fold reads while it adds into h
    oj.form = GemvForm::AddCopy;
    oj.copy = c.activation(P + ".h_mlp", H, ir::DType::F32);
  }
  if (!c.fusion.o_residual) {
    oj.form = GemvForm::Plain;
    oj.out = c.activation(P + ".o", H);
  }
  c.b.begin_stage(P + " o_proj");
  emit_gemv_tiles(c, oj);  // first: stage_balance then gives the appends the SMs with the fewest bytes
  beside();
  if (!c.fusion.o_residual) {
    c.b.begin_stage(P + " attn_residual");
    emit_elementwise(c, ir::Opcode::Add, P + ".attn_residual", c.h, oj.out, c.h);
    beside();
  }
  return oj.copy;
}

// The rope-in-qkv layer (docs/ROPE_IN_GEMV.md): the q / k / v tiles rotate q and k (W_q, W_k in
// rope-pair order) and store k and v straight into the caches' row step.pos, so the attention
// that follows is a plain ATTENTION_TILE over the STEP_KV window [0, pos] and the layer has no
// append tasks. q and the cache hold rotated values in rope-pair order: q . k is unchanged, and V
// (and so the attention's output) keeps the model's order.
ir::BufferId emit_rope_qkv_block(LowerContext& c, const std::string& P, const LayerWeights& w, ir::BufferId q,
                                 ir::BufferId k_cache, ir::BufferId v_cache) {
  const ModelConfig& m = c.model;
  const int64_t H = m.hidden_size;
  const GemvJob jobs[] = {
      {P + ".q_proj", "q_proj", GemvForm::RmsNormRope, c.h, w.attn_norm, w.q, q, H, m.q_dim()},
      {P + ".k_proj", "k_proj", GemvForm::RmsNormRopeAppend, c.h, w.attn_norm, w.k, k_cache, H, m.kv_dim()},
      {P + ".v_proj", "v_proj", GemvForm::RmsNormAppend, c.h, w.attn_norm, w.v, v_cache, H, m.kv_dim()}};
  c.b.begin_stage(P + " qkv");
  for (const GemvJob& j : jobs) emit_gemv_tiles(c, j);
  const ir::BufferId attn = c.activation(P + ".attn", m.q_dim());
  emit_attention(c, P, q, k_cache, v_cache, attn, FreshRow{});
  return emit_o_proj(c, P, w, attn, [] {});
}

/// Returns the copy of h the o_proj tiles leave for the MLP fold (none without it).
ir::BufferId emit_attention_block(LowerContext& c, const std::string& P, const LayerWeights& w) {
  const ModelConfig& m = c.model;
  const int64_t H = m.hidden_size;
  const ir::BufferId k_cache = c.b.add_buffer(P + ".k_cache", ir::BufferKind::KvCache, c.dtype, {c.max_seq, m.kv_dim()});
  const ir::BufferId v_cache = c.b.add_buffer(P + ".v_cache", ir::BufferKind::KvCache, c.dtype, {c.max_seq, m.kv_dim()});
  const ir::BufferId q = c.activation(P + ".q", m.q_dim());
  if (c.fusion.rope_qkv) return emit_rope_qkv_block(c, P, w, q, k_cache, v_cache);
  const ir::BufferId k = c.activation(P + ".k", m.kv_dim());
  const ir::BufferId v = c.activation(P + ".v", m.kv_dim());

  GemvJob qj{P + ".q_proj", "q_proj", GemvForm::Plain, c.h, ir::BufferId(), w.q, q, H, m.q_dim()};
  GemvJob kj{P + ".k_proj", "k_proj", GemvForm::Plain, c.h, ir::BufferId(), w.k, k, H, m.kv_dim()};
  GemvJob vj{P + ".v_proj", "v_proj", GemvForm::Plain, c.h, ir::BufferId(), w.v, v, H, m.kv_dim()};
  if (c.fusion.attn_norm_qkv) {
    for (GemvJob* j : {&qj, &kj, &vj}) {
      j->form = GemvForm::RmsNorm;
      j->x2 = w.attn_norm;
    }
  } else {
    const ir::BufferId xn = c.activation(P + ".attn_norm_out", H);
    c.b.begin_stage(P + " attn_norm");
    emit_rmsnorm(c, P + ".attn_norm", c.h, w.attn_norm, xn);
    qj.x = kj.x = vj.x = xn;
  }
  c.b.begin_stage(P + " qkv");
  for (const GemvJob* j : {&qj, &kj, &vj}) emit_gemv_tiles(c, *j);

  // The step's k and v rows go into the caches: k rotated (ROPE_APPEND, or ROPE then KV_APPEND a
  // stage later), v as it is. Each entry is the tasks of one stage.
  const ir::BufferId q_rot = c.fusion.rope_attention ? ir::BufferId() : c.activation(P + ".q_rot", m.q_dim());
  const ir::BufferId k_rot = c.fusion.rope_append ? ir::BufferId() : c.activation(P + ".k_rot", m.kv_dim());
  std::deque<std::function<void()>> appends;
  appends.emplace_back([&] {
    if (c.fusion.rope_append) emit_rope_append(c, P + ".rope_append_k", k, k_cache);
    else emit_rope(c, P + ".rope_k", k, k_rot);
    emit_kv_append(c, P + ".kv_append_v", v, v_cache);  // v needs no rotation
  });
  if (!c.fusion.rope_append) appends.emplace_back([&] { emit_kv_append(c, P + ".kv_append_k", k_rot, k_cache); });
  const auto next_appends = [&appends] {
    if (appends.empty()) return;
    appends.front()();
    appends.pop_front();
  };

  if (c.fusion.attention_o_proj) {
    // No attention stage: the o_proj tiles compute it. The appends join their stage (they write
    // row pos, which the tiles take from k / v instead of the caches).
    c.b.begin_stage(P + " attention_o_proj");
    emit_attention_o_proj(c, P, q, k_cache, v_cache, FreshRow{k, v}, w.o);
    next_appends();
    while (!appends.empty()) {  // without ROPE_APPEND: KV_APPEND k after ROPE k
      c.b.begin_stage(P + " kv_append");
      next_appends();
    }
    return ir::BufferId();  // the MLP fold cannot be on (fusion_plan)
  }

  const ir::BufferId attn = c.activation(P + ".attn", m.q_dim());
  if (c.fusion.rope_attention) {
    // The attention tasks rotate q and take row pos from k / v themselves (FUSED ROPE_ATTENTION),
    // so the rope stage and its hop are gone. The appends then join the stages after the
    // attention: they write rows the attention tasks (which read the caches) must not see
    // half-written, and only the next step reads them.
    emit_attention(c, P, q, k_cache, v_cache, attn, FreshRow{k, v});
    if (c.tiling.kv_partitions > 1) next_appends();  // beside the combine tasks
  } else {
    c.b.begin_stage(P + " rope");
    emit_rope(c, P + ".rope_q", q, q_rot);
    next_appends();
    if (!appends.empty()) {
      c.b.begin_stage(P + " kv_append");
      next_appends();
    }
    emit_attention(c, P, q_rot, k_cache, v_cache, attn, FreshRow{});
  }

  const ir::BufferId copy = emit_o_proj(c, P, w, attn, next_appends);
  while (!appends.empty()) {
    c.b.begin_stage(P + " kv_append");
    next_appends();
  }
  return copy;
}

// One stage of RMSNORM_MLP_FOLD tasks over `h_mlp` (o_proj's copy of h), each a span of the
// intermediate columns (gate_proj's N_tile), accumulating into h (docs/FOLD.md).
void emit_mlp_fold(LowerContext& c, const std::string& P, const LayerWeights& w, ir::BufferId h_mlp) {
  const ModelConfig& m = c.model;
  const int64_t H = m.hidden_size, I = m.intermediate_size;
  c.b.begin_stage(P + " mlp_fold");
  const auto recipe = static_cast<int64_t>(ir::FusedRecipe::RmsNormMlpFold);
  for (const Span& t : projection_spans(c.tiling, "gate_proj", I)) {
    ir::Params p;
    p.set("recipe", std::string(ir::recipe_find(recipe)->name));
    p.set("K", H);
    p.set("N_tile", t.len);
    p.set("n_off", t.off);
    p.set("eps", m.rms_norm_eps);
    p.set("flags", ir::kFlagAccumulate | (recipe << ir::kFlagRecipeShift));
    const Cost cost = cost_mlp_fold(H, t.len, c.weight_dtype);
    c.b.add_task(ir::Opcode::Fused, {h_mlp, w.mlp_norm, w.mlp}, {c.h}, std::move(p),
                 P + ".mlp_fold[" + std::to_string(t.off) + ":" + std::to_string(t.off + t.len) + "]", cost.bytes,
                 cost.flops);
  }
}

void emit_mlp_block(LowerContext& c, const std::string& P, const LayerWeights& w, ir::BufferId h_mlp) {
  if (c.fusion.mlp_fold) {
    emit_mlp_fold(c, P, w, h_mlp);
    return;
  }
  const ModelConfig& m = c.model;
  const int64_t H = m.hidden_size, I = m.intermediate_size;
  const ir::BufferId gate = c.activation(P + ".gate", I);
  const ir::BufferId up = c.activation(P + ".up", I);
  GemvJob gj{P + ".gate_proj", "gate_proj", GemvForm::Plain, c.h, ir::BufferId(), w.gate, gate, H, I};
  GemvJob uj{P + ".up_proj", "up_proj", GemvForm::Plain, c.h, ir::BufferId(), w.up, up, H, I};
  if (c.fusion.mlp_norm_gate_up) {
    gj.form = uj.form = GemvForm::RmsNorm;
    gj.x2 = uj.x2 = w.mlp_norm;
  } else {
    const ir::BufferId xn = c.activation(P + ".mlp_norm_out", H);
    c.b.begin_stage(P + " mlp_norm");
    emit_rmsnorm(c, P + ".mlp_norm", c.h, w.mlp_norm, xn);
    gj.x = uj.x = xn;
  }
  c.b.begin_stage(P + " gate_up");
  emit_gemv_tiles(c, gj);
  emit_gemv_tiles(c, uj);

  GemvJob dj{P + ".down_proj", "down_proj", GemvForm::Plain, gate, up, w.down, c.h, I, H};
  if (!c.fusion.silu_down) {
    const ir::BufferId act = c.activation(P + ".silu_mul_out", I);
    c.b.begin_stage(P + " silu_mul");
    emit_elementwise(c, ir::Opcode::SiluMul, P + ".silu_mul", gate, up, act);
    dj.x = act;
  }
  if (c.fusion.down_residual) {
    dj.form = c.fusion.silu_down ? GemvForm::SiluMulAdd : GemvForm::Add;
    c.b.begin_stage(P + " down_proj");
    emit_gemv_tiles(c, dj);
    return;
  }
  dj.form = c.fusion.silu_down ? GemvForm::SiluMul : GemvForm::Plain;
  dj.out = c.activation(P + ".down", H);
  c.b.begin_stage(P + " down_proj");
  emit_gemv_tiles(c, dj);
  c.b.begin_stage(P + " mlp_residual");
  emit_elementwise(c, ir::Opcode::Add, P + ".mlp_residual", c.h, dj.out, c.h);
}

}  // namespace

void emit_layer(LowerContext& c, int64_t layer) {
  const std::string P = "L" + std::to_string(layer);
  const LayerWeights w = layer_weights(c, P, layer);
  const ir::BufferId h_mlp = emit_attention_block(c, P, w);
  emit_mlp_block(c, P, w, h_mlp);
}

}  // namespace amk::schedule
