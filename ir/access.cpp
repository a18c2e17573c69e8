// ir/access.cpp: the per-opcode access model of docs/OPCODES.md (whole buffers by default; tiles
// for GEMV_TILE, GEMM_TILE, ATTENTION_TILE and FUSED ROPE_ATTENTION (a row of a stacked output), a head-tiled
// ATTENTION_COMBINE, SAMPLE_ARGMAX tiles and the FUSED GEMV recipes (GEMV_ADD_COPY: the tile of both
// outputs; ATTENTION_GEMV_ADD: its W rows too); KV_APPEND reads its cache; RMSNORM_MLP_FOLD reads a
// row range of w_mlp and accumulates).
// Regions are exactly what the kernel touches, even when a tile lies outside its buffer: validate()
// reports such a tile as tile.bounds, and the race analysis still sees the real footprint.
#include "ir/access.h"

#include <limits>

#include "ir/opspec.h"

namespace amk::ir {
namespace {

constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;

int64_t clamp_dim(int64_t d) { return d < 0 ? 0 : d; }

// Saturating multiply so absurd shapes cannot overflow; validate() reports them as `shape`.
int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const int64_t mag_a = a < 0 ? -a : a, mag_b = b < 0 ? -b : b;  // |a|, |b| <= 2^62 here
  if (mag_a > kBig / mag_b) return ((a < 0) != (b < 0)) ? -kBig : kBig;
  return a * b;
}

// Params outside int32 are rejected by validate() (params.type); clamping them keeps the region
// arithmetic below free of overflow.
int64_t clamp_param(int64_t v) {
  constexpr int64_t kLimit = int64_t{1} << 40;
  return v < -kLimit ? -kLimit : (v > kLimit ? kLimit : v);
}

// A required int param, only when it is stored as an integer (mistyped params mean "whole").
bool int_param(const Params& p, const char* key, int64_t& out) {
  auto v = p.get_int(key);
  if (!v) return false;
  out = clamp_param(*v);
  return true;
}

int64_t int_or(const Params& p, const char* key, int64_t fallback) { return clamp_param(p.int_or(key, fallback)); }

const Buffer* buffer_at(const Program& program, BufferId id, const std::vector<int32_t>* index) {
  if (index != nullptr) {
    if (id.value < 0 || static_cast<size_t>(id.value) >= index->size() || (*index)[id.value] < 0) return nullptr;
    return &program.buffers[static_cast<size_t>((*index)[id.value])];
  }
  // Without an index: by position when ids are in order, else a search (usable on broken input).
  const auto idx = static_cast<size_t>(id.value);
  if (id.value >= 0 && idx < program.buffers.size() && program.buffers[idx].id == id) return &program.buffers[idx];
  for (const Buffer& b : program.buffers)
    if (b.id == id) return &b;
  return nullptr;
}

Region whole_or_empty(const Buffer* b) { return b != nullptr ? whole_region(*b) : Region{}; }

// Column tile [c0, c1) over every row of the buffer.
Region col_tile(const Buffer* b, int64_t c0, int64_t c1) {
  Region r = whole_or_empty(b);
  r.col_begin = c0;
  r.col_end = c1;
  return r;
}

struct Emitter {
  const Program& program;
  const Task& task;
  std::vector<Access>& out;
  const std::vector<int32_t>* index;
  void read(size_t i, const Region* region = nullptr) {
    if (i >= task.inputs.size()) return;
    const BufferId id = task.inputs[i];
    out.push_back(Access{id, false, region ? *region : whole_or_empty(buffer_at(program, id, index)), static_cast<int>(i)});
  }
  void write(size_t i, const Region* region = nullptr, bool accumulate = false) {
    if (i >= task.outputs.size()) return;
    const BufferId id = task.outputs[i];
    out.push_back(Access{id, true, region ? *region : whole_or_empty(buffer_at(program, id, index)), static_cast<int>(i),
                         accumulate});
  }
  const Buffer* in_buf(size_t i) const {
    return i < task.inputs.size() ? buffer_at(program, task.inputs[i], index) : nullptr;
  }
  const Buffer* out_buf(size_t i) const {
    return i < task.outputs.size() ? buffer_at(program, task.outputs[i], index) : nullptr;
  }
  void rest(size_t first_read_done_mask, bool write_whole) {
    for (size_t i = 0; i < task.inputs.size(); ++i)
      if (i >= 64 || !(first_read_done_mask & (size_t{1} << i))) read(i);
    if (write_whole)
      for (size_t o = 0; o < task.outputs.size(); ++o) write(o);
  }
};

// GEMV-shaped tile: writes outputs [0, tile_outputs) over cols [n_off, n_off+N_tile) (GEMV_ADD_COPY
// stores its tile twice); `residual` (or -1) is read over the same columns and `weight` (or -1)
// over rows [n_off, n_off+N_tile). Everything else is read or written whole.
void gemv_like(Emitter& e, int residual, size_t tile_outputs = 1, int weight = -1) {
  int64_t n_off = 0, n_tile = 0;
  if (!int_param(e.task.params, "n_off", n_off) || !int_param(e.task.params, "N_tile", n_tile)) {
    e.rest(0, true);
    return;
  }
  size_t done = 0;
  if (residual >= 0 && static_cast<size_t>(residual) < e.task.inputs.size()) {
    Region r = col_tile(e.in_buf(static_cast<size_t>(residual)), n_off, n_off + n_tile);
    e.read(static_cast<size_t>(residual), &r);
    done |= size_t{1} << residual;
  }
  if (weight >= 0 && static_cast<size_t>(weight) < e.task.inputs.size()) {
    Region w = whole_or_empty(e.in_buf(static_cast<size_t>(weight)));
    w.row_begin = n_off;
    w.row_end = n_off + n_tile;
    e.read(static_cast<size_t>(weight), &w);
    done |= size_t{1} << weight;
  }
  e.rest(done, false);
  for (size_t o = 0; o < e.task.outputs.size(); ++o) {
    Region w = col_tile(e.out_buf(o), n_off, n_off + n_tile);
    e.write(o, o < tile_outputs ? &w : nullptr);
  }
}

// FUSED RMSNORM_MLP_FOLD [x, norm_w, w_mlp [I, 3, K]] -> out: x and norm_w whole; of w_mlp's
// [3 I, K] matrix view, the triples (gate, up, down^T rows) of columns [n_off, n_off + N_tile),
// which are rows [3 n_off, 3 (n_off + N_tile)); out whole, added into when the task carries
// ACCUMULATE (which validate() requires; without it the write is judged as a plain store).
void mlp_fold(Emitter& e) {
  int64_t n_off = 0, n_tile = 0;
  e.read(0);
  e.read(1);
  if (int_param(e.task.params, "n_off", n_off) && int_param(e.task.params, "N_tile", n_tile)) {
    Region w = whole_or_empty(e.in_buf(2));
    w.row_begin = mul_sat(3, n_off);
    w.row_end = mul_sat(3, n_off + n_tile);
    e.read(2, &w);
  } else {
    e.read(2);
  }
  e.rest(0x7, false);  // inputs past the recipe's three (an arity error) are read whole
  const auto flags = e.task.params.get_int("flags");
  e.write(0, nullptr, flags && (*flags & kFlagAccumulate) != 0);
  for (size_t o = 1; o < e.task.outputs.size(); ++o) e.write(o);
}

void gemm_tile(Emitter& e) {
  int64_t n_off = 0, n_tile = 0, m_tile = 0;
  const int64_t m_off = int_or(e.task.params, "m_off", 0);
  if (!int_param(e.task.params, "n_off", n_off) || !int_param(e.task.params, "N_tile", n_tile) ||
      !int_param(e.task.params, "M_tile", m_tile) ||
      (e.task.params.has("m_off") && !e.task.params.get_int("m_off"))) {
    e.rest(0, true);
    return;
  }
  Region x = whole_or_empty(e.in_buf(0));
  x.row_begin = m_off;
  x.row_end = m_off + m_tile;
  e.read(0, &x);
  e.rest(1, false);
  Region y{m_off, m_off + m_tile, n_off, n_off + n_tile};
  e.write(0, &y);
  for (size_t o = 1; o < e.task.outputs.size(); ++o) e.write(o);
}

// head_dim and the head tile [n_off, n_off + N_tile) of ATTENTION_TILE / ATTENTION_COMBINE
// (defaults 0 and n_heads). False when head_dim or n_heads is missing or mistyped, or n_off /
// N_tile is mistyped: the task is then seen as touching its buffers whole.
struct HeadTile {
  int64_t hd = 0, n_off = 0, n_tile = 0;
};
bool head_tile(const Params& p, HeadTile* t) {
  int64_t n_heads = 0;
  if (!int_param(p, "head_dim", t->hd) || !int_param(p, "n_heads", n_heads) || (p.has("n_off") && !p.get_int("n_off")) ||
      (p.has("N_tile") && !p.get_int("N_tile")))
    return false;
  t->n_off = int_or(p, "n_off", 0);
  t->n_tile = int_or(p, "N_tile", n_heads);
  return true;
}

void attention_tile(Emitter& e) {
  const Params& p = e.task.params;
  HeadTile h;
  if (!head_tile(p, &h) || (p.has("flags") && !p.get_int("flags"))) {
    e.rest(0, true);
    return;
  }
  const int64_t width = (int_or(p, "flags", 0) & kFlagPartialWrite) ? h.hd + 2 : h.hd;
  Region q = col_tile(e.in_buf(0), mul_sat(h.n_off, h.hd), mul_sat(h.n_off + h.n_tile, h.hd));
  e.read(0, &q);
  e.rest(1, false);
  Region out = col_tile(e.out_buf(0), mul_sat(h.n_off, width), mul_sat(h.n_off + h.n_tile, width));
  // A stacked output [S, n_heads * width] (split-KV partials): only its row m_off. Other ranks
  // are one row; a mistyped m_off means the whole column tile.
  const Buffer* ob = e.out_buf(0);
  if (ob != nullptr && ob->shape.size() == 2 && (!p.has("m_off") || p.get_int("m_off"))) {
    const int64_t m_off = int_or(p, "m_off", 0);
    out.row_begin = m_off;
    out.row_end = m_off + 1;
  }
  e.write(0, &out);
  for (size_t o = 1; o < e.task.outputs.size(); ++o) e.write(o);
}

// A head tile [n_off, n_off + N_tile) of ATTENTION_COMBINE (an amk extension, docs/OPCODES.md):
// reads those heads' [acc, m, l] columns of every partial and writes their columns of y. Without
// n_off / N_tile (or without an explicit head_dim and n_heads) it reads and writes everything.
void attention_combine(Emitter& e) {
  const Params& p = e.task.params;
  HeadTile h;
  if ((!p.has("n_off") && !p.has("N_tile")) || !head_tile(p, &h)) {
    e.rest(0, true);
    return;
  }
  for (size_t i = 0; i < e.task.inputs.size(); ++i) {
    Region part = col_tile(e.in_buf(i), mul_sat(h.n_off, h.hd + 2), mul_sat(h.n_off + h.n_tile, h.hd + 2));
    e.read(i, &part);
  }
  Region y = col_tile(e.out_buf(0), mul_sat(h.n_off, h.hd), mul_sat(h.n_off + h.n_tile, h.hd));
  e.write(0, &y);
  for (size_t o = 1; o < e.task.outputs.size(); ++o) e.write(o);
}

// A SAMPLE_ARGMAX tile (N_tile given, an amk extension, docs/OPCODES.md) reads logits cols
// [n_off, n_off + N_tile) and writes its candidate slot, col m_off; the whole scan and the combine
// read everything (a combine's gather depends on the candidates' values).
void sample_argmax(Emitter& e) {
  const Params& p = e.task.params;
  int64_t n_tile = 0;
  if (!int_param(p, "N_tile", n_tile) || (p.has("n_off") && !p.get_int("n_off")) ||
      (p.has("m_off") && !p.get_int("m_off"))) {
    e.rest(0, true);
    return;
  }
  const int64_t n_off = int_or(p, "n_off", 0), m_off = int_or(p, "m_off", 0);
  Region logits = col_tile(e.in_buf(0), n_off, n_off + n_tile);
  e.read(0, &logits);
  e.rest(1, false);
  Region slot = col_tile(e.out_buf(0), m_off, m_off + 1);
  e.write(0, &slot);
  for (size_t o = 1; o < e.task.outputs.size(); ++o) e.write(o);
}

void fused(Emitter& e) {
  const RecipeSpec* recipe = nullptr;
  if (auto name = e.task.params.get_string("recipe")) recipe = recipe_find(*name);
  if (recipe != nullptr && recipe->recipe == FusedRecipe::RopeAttention) {  // ATTENTION_TILE's head tiles
    attention_tile(e);
    return;
  }
  if (recipe != nullptr && recipe->recipe == FusedRecipe::RmsNormMlpFold) {
    mlp_fold(e);
    return;
  }
  if (recipe == nullptr || !recipe->gemv) {  // ROPE_APPEND: as KV_APPEND, the cache read and written whole
    e.rest(0, true);
    return;
  }
  // ATTENTION_GEMV_ADD: the attention over every head reads q, the caches (whole, as ROPE_ATTENTION's:
  // validate_objects.cpp leaves those reads out where only the step's appends write a cache) and
  // the step's inputs whole; then GEMV_ADD's tile, over W's rows of the tile as well.
  if (recipe->recipe == FusedRecipe::AttentionGemvAdd) {
    gemv_like(e, recipe->residual_input, 1, recipe->weight_input);
    return;
  }
  gemv_like(e, recipe->residual_input, static_cast<size_t>(recipe->outputs));
}

}  // namespace

MatrixView matrix_view(const Buffer& buffer) {
  MatrixView v;
  if (buffer.shape.empty()) return v;
  v.cols = clamp_dim(buffer.shape.back());
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < buffer.shape.size(); ++i) rows = mul_sat(rows, clamp_dim(buffer.shape[i]));
  v.rows = rows;
  return v;
}

Region whole_region(const Buffer& buffer) {
  const MatrixView v = matrix_view(buffer);
  return Region{0, v.rows, 0, v.cols};
}

void task_accesses_append(const Program& program, const Task& task, std::vector<Access>& out,
                          const std::vector<int32_t>* buffer_of_id) {
  Emitter e{program, task, out, buffer_of_id};
  switch (task.op) {
    case Opcode::GemvTile: gemv_like(e, -1); break;
    case Opcode::GemmTile: gemm_tile(e); break;
    case Opcode::AttentionTile: attention_tile(e); break;
    case Opcode::AttentionCombine: attention_combine(e); break;
    case Opcode::SampleArgmax: sample_argmax(e); break;
    case Opcode::Fused: fused(e); break;
    default: e.rest(0, true); break;  // KV_APPEND included: it reads input 1 whole and writes it whole
  }
}

std::vector<Access> task_accesses(const Program& program, const Task& task) {
  std::vector<Access> out;
  task_accesses_append(program, task, out);
  return out;
}

}  // namespace amk::ir
