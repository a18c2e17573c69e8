// schedule/emit_common.cpp: buffers, projection tiles and the program's first and last stages.
// Tile params are written in a fixed order (recipe, K, N_tile, n_off, eps, flags) so the same
// inputs always produce byte-identical JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ir/opspec.h"
#include "schedule/cost.h"
#include "schedule/emit.h"

namespace amk::schedule {
namespace {

// Shortest text that reads back as exactly `v` ("500000", "1e-05", "0.5"), so sources are stable.
std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string span_text(int64_t off, int64_t len) {
  return "[" + std::to_string(off) + ":" + std::to_string(off + len) + "]";
}

ir::FusedRecipe recipe_of(GemvForm form) {
  switch (form) {
    case GemvForm::RmsNorm: return ir::FusedRecipe::RmsNormGemv;
    case GemvForm::SiluMul: return ir::FusedRecipe::SiluMulGemv;
    case GemvForm::Add: return ir::FusedRecipe::GemvAdd;
    case GemvForm::SiluMulAdd: return ir::FusedRecipe::SiluMulGemvAdd;
    case GemvForm::AddCopy: return ir::FusedRecipe::GemvAddCopy;
    case GemvForm::RmsNormRope: return ir::FusedRecipe::RmsNormGemvRope;
    case GemvForm::RmsNormAppend: return ir::FusedRecipe::RmsNormGemvAppend;
    case GemvForm::RmsNormRopeAppend: return ir::FusedRecipe::RmsNormGemvRopeAppend;
    case GemvForm::Plain: break;
  }
  return ir::FusedRecipe::GemvAdd;  // unreachable: Plain is not FUSED
}

}  // namespace

ir::BufferId LowerContext::activation(const std::string& name, int64_t n, ir::DType d) {
  return b.add_buffer(name, ir::BufferKind::Activation, d, {n}, ir::MemSpace::GlobalScratch);
}

ir::BufferId LowerContext::weight(const std::string& name, std::vector<int64_t> shape, const std::string& source) {
  return b.add_buffer(name, ir::BufferKind::Weight, weight_dtype, std::move(shape), ir::MemSpace::Hbm, source);
}

ir::BufferId LowerContext::weight_stack(const std::string& name, std::vector<int64_t> shape,
                                       std::vector<ir::StackPart> parts) {
  const ir::BufferId id = b.add_buffer(name, ir::BufferKind::Weight, weight_dtype, std::move(shape), ir::MemSpace::Hbm);
  b.buffer_mut(id).stack = std::move(parts);
  return id;
}

ir::BufferId LowerContext::weight_rope_pairs(const std::string& name, std::vector<int64_t> shape,
                                            const std::string& source, int64_t head_dim) {
  const ir::BufferId id = weight(name, std::move(shape), source);
  b.buffer_mut(id).rope_pairs = head_dim;
  return id;
}

std::string rope_inv_freq_source(const ModelConfig& m) {
  std::string s = "amk:rope_inv_freq?theta=" + number_text(m.rope_theta) + "&dim=" + std::to_string(m.head_dim);
  if (m.llama3_scaling) {
    const Llama3RopeScaling& r = *m.llama3_scaling;
    s += "&rope_type=llama3&factor=" + number_text(r.factor) + "&low_freq_factor=" + number_text(r.low_freq_factor) +
         "&high_freq_factor=" + number_text(r.high_freq_factor) +
         "&original_max_position_embeddings=" + std::to_string(r.original_max_position_embeddings);
  }
  return s;
}

void emit_gemv_tiles(LowerContext& c, const GemvJob& j) {
  const ir::DType out_dtype = c.b.buffer(j.out).dtype;
  const bool fused = j.form != GemvForm::Plain;
  const bool rotates = j.form == GemvForm::RmsNormRope || j.form == GemvForm::RmsNormRopeAppend;
  const bool step_form = rotates || j.form == GemvForm::RmsNormAppend;
  const bool rmsnorm = j.form == GemvForm::RmsNorm || step_form;
  // Rotating tiles hold whole rope pairs (rows 2i, 2i + 1); N is whole heads, so even.
  for (const Span& t : projection_spans(c.tiling, j.proj, j.N, rotates)) {
    ir::Params p;
    std::vector<ir::BufferId> in;
    Cost cost;
    switch (j.form) {
      case GemvForm::Plain:
        in = {j.x, j.w};
        cost = cost_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
      case GemvForm::RmsNorm:
      case GemvForm::RmsNormAppend:
        in = {j.x, j.x2, j.w};
        cost = cost_rmsnorm_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
      case GemvForm::RmsNormRope:
      case GemvForm::RmsNormRopeAppend:
        in = {j.x, j.x2, j.w, c.inv_freq};
        cost = cost_rmsnorm_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
      case GemvForm::SiluMul:
        in = {j.x, j.x2, j.w};
        cost = cost_silu_mul_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
      case GemvForm::Add:
      case GemvForm::AddCopy:
        in = {j.x, j.w, j.out};
        cost = cost_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
      case GemvForm::SiluMulAdd:
        in = {j.x, j.x2, j.w, j.out};
        cost = cost_silu_mul_gemv(j.K, t.len, c.weight_dtype, c.dtype, out_dtype);
        break;
    }
    if (j.form == GemvForm::Add || j.form == GemvForm::SiluMulAdd || j.form == GemvForm::AddCopy) {
      const Cost r = cost_residual(t.len, out_dtype);
      cost.bytes += r.bytes;
      cost.flops += r.flops;
    }
    const ir::FusedRecipe recipe = recipe_of(j.form);
    if (fused) p.set("recipe", std::string(ir::recipe_find(static_cast<int64_t>(recipe))->name));
    p.set("K", j.K);
    p.set("N_tile", t.len);
    p.set("n_off", t.off);
    if (rmsnorm) p.set("eps", c.model.rms_norm_eps);
    if (rotates) p.set("head_dim", c.model.head_dim);
    if (step_form) p.set("pos", int64_t{0});  // the step's position (STEP_POS)
    const int64_t step_flags = step_form ? ir::kFlagStepPos : 0;
    if (fused) p.set("flags", step_flags | (static_cast<int64_t>(recipe) << ir::kFlagRecipeShift));
    if (j.form == GemvForm::AddCopy) cost.bytes += ir::dtype_nbytes(c.b.buffer(j.copy).dtype, t.len);
    std::vector<ir::BufferId> out{j.out};
    if (j.form == GemvForm::AddCopy) out.push_back(j.copy);
    c.b.add_task(fused ? ir::Opcode::Fused : ir::Opcode::GemvTile, std::move(in), std::move(out), std::move(p),
                 j.label + span_text(t.off, t.len), cost.bytes, cost.flops);
  }
}

void emit_rmsnorm(LowerContext& c, const std::string& label, ir::BufferId x, ir::BufferId w, ir::BufferId y) {
  ir::Params p;
  p.set("eps", c.model.rms_norm_eps);
  p.set("hidden", c.model.hidden_size);
  const Cost cost = cost_rmsnorm(c.model.hidden_size, c.dtype, c.weight_dtype);
  c.b.add_task(ir::Opcode::RmsNorm, {x, w}, {y}, std::move(p), label, cost.bytes, cost.flops);
}

void emit_elementwise(LowerContext& c, ir::Opcode op, const std::string& label, ir::BufferId a, ir::BufferId b,
                      ir::BufferId y) {
  const int64_t n = c.b.buffer(y).numel();
  const Cost cost = cost_elementwise(n, 2, c.dtype, op == ir::Opcode::SiluMul ? 6 : 1);
  c.b.add_task(op, {a, b}, {y}, ir::Params{}, label, cost.bytes, cost.flops);
}

void emit_embed(LowerContext& c) {
  const ModelConfig& m = c.model;
  c.token = c.b.add_buffer("token", ir::BufferKind::IoInput, ir::DType::I32, {1});
  c.embed = c.weight("embed_tokens", {m.vocab_size, m.hidden_size}, "model.embed_tokens.weight");
  c.inv_freq = c.b.add_buffer("rope_inv_freq", ir::BufferKind::Const, ir::DType::F32, {m.head_dim / 2},
                              ir::MemSpace::Hbm, rope_inv_freq_source(m));
  // The fold's tasks add into h with F32 atomic adds (docs/FOLD.md).
  c.h = c.activation("h", m.hidden_size, c.fusion.mlp_fold ? ir::DType::F32 : c.dtype);

  c.b.begin_stage("embed");
  ir::Params p;
  p.set("hidden", m.hidden_size);
  const Cost cost = cost_embed(m.hidden_size, c.weight_dtype, c.dtype);
  c.b.add_task(ir::Opcode::Embed, {c.token, c.embed}, {c.h}, std::move(p), "embed", cost.bytes, cost.flops);
}

void emit_head(LowerContext& c, ir::BufferId& logits, ir::BufferId& next_token) {
  const ModelConfig& m = c.model;
  const ir::BufferId norm_w = c.weight("final_norm", {m.hidden_size}, "model.norm.weight");
  const ir::BufferId lm_w =
      m.tie_word_embeddings ? c.embed : c.weight("lm_head", {m.vocab_size, m.hidden_size}, "lm_head.weight");
  logits = c.b.add_buffer("logits", ir::BufferKind::IoOutput, ir::DType::F32, {m.vocab_size});
  next_token = c.b.add_buffer("next_token", ir::BufferKind::IoOutput, ir::DType::I32, {1});

  GemvJob job{"lm_head", "lm_head", GemvForm::Plain, c.h, ir::BufferId(), lm_w, logits, m.hidden_size, m.vocab_size};
  if (c.fusion.final_norm_lm_head) {
    job.form = GemvForm::RmsNorm;
    job.x2 = norm_w;
  } else {
    job.x = c.activation("final_norm_out", m.hidden_size);
    c.b.begin_stage("final_norm");
    emit_rmsnorm(c, "final_norm", c.h, norm_w, job.x);
  }
  c.b.begin_stage("lm_head");
  emit_gemv_tiles(c, job);

  emit_argmax(c, logits, next_token);
}

void emit_argmax(LowerContext& c, ir::BufferId logits, ir::BufferId next_token) {
  const int64_t vocab = c.model.vocab_size;
  if (c.tiling.argmax_tile == 0) {
    c.b.begin_stage("argmax");
    const Cost cost = cost_argmax(vocab, ir::DType::F32);
    c.b.add_task(ir::Opcode::SampleArgmax, {logits}, {next_token}, ir::Params{}, "argmax", cost.bytes, cost.flops);
    return;
  }
  // Split over SMs: each tile's best index into its slot of `argmax_candidates`, then one combine
  // over the candidates. One SM scanning every logit was ~31 us of the 1B token on an H200.
  const std::vector<Span> tiles = spans_cover(vocab, c.tiling.argmax_tile);
  const int64_t n_tiles = static_cast<int64_t>(tiles.size());
  const ir::BufferId candidates = c.activation("argmax_candidates", n_tiles, ir::DType::I32);
  c.b.begin_stage("argmax_tiles");
  for (int64_t t = 0; t < n_tiles; ++t) {
    ir::Params p;
    p.set("N_tile", tiles[t].len);
    p.set("n_off", tiles[t].off);
    p.set("m_off", t);
    const Cost cost = cost_argmax(tiles[t].len, ir::DType::F32);
    c.b.add_task(ir::Opcode::SampleArgmax, {logits}, {candidates}, std::move(p),
                 "argmax" + span_text(tiles[t].off, tiles[t].len), cost.bytes, cost.flops);
  }
  c.b.begin_stage("argmax");
  const Cost cost = cost_argmax_combine(n_tiles, ir::DType::F32);
  c.b.add_task(ir::Opcode::SampleArgmax, {logits, candidates}, {next_token}, ir::Params{}, "argmax_combine", cost.bytes,
               cost.flops);
}

}  // namespace amk::schedule
