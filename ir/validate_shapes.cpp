// ir/validate_shapes.cpp: what each opcode can accept (docs/OPCODES.md): operand shapes (`shape`),
// tiles inside their buffers (`tile.bounds`) and the contract rules (`contract`). A shape the
// kernel cannot handle is an out-of-bounds access on the device, so these are errors, not hints.
// Checks whose params are missing or mistyped are skipped: validate_params.cpp reports those.
#include <climits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ir/opspec.h"
#include "ir/validate_checks.h"

namespace amk::ir::detail {
namespace {

std::string s(int64_t v) { return std::to_string(v); }

// Products of a numel with a param cannot overflow into a false "equal".
int64_t mul_sat(int64_t a, int64_t b) {
  constexpr int64_t kBig = int64_t{1} << 62;
  if (a == 0 || b == 0) return 0;
  if (a < 0 || b < 0 || a > kBig / b) return -1;
  return a * b;
}

class TaskShapes {
 public:
  TaskShapes(Context& cx, int32_t t) : cx_(cx), t_(t), task_(cx.program.tasks[t]) {}

  void run();

 private:
  int32_t in_pos(size_t i) const { return position_of(cx_.ix.buffer_of_id, task_.inputs[i]); }
  int32_t out_pos(size_t i) const { return position_of(cx_.ix.buffer_of_id, task_.outputs[i]); }
  const Buffer* in(size_t i) const { return i < task_.inputs.size() ? &cx_.program.buffers[in_pos(i)] : nullptr; }
  const Buffer* out(size_t i) const { return i < task_.outputs.size() ? &cx_.program.buffers[out_pos(i)] : nullptr; }
  // An int param as stored; values outside int32 are params.type errors, and checks that depend
  // on them are skipped (which also keeps the arithmetic below far from overflow).
  std::optional<int64_t> p(const char* key) const {
    auto v = task_.params.get_int(key);
    if (v && (*v < INT32_MIN || *v > INT32_MAX)) return std::nullopt;
    return v;
  }
  std::string name(const Buffer* b) const { return "buffer " + s(b->id.value) + " \"" + b->name + "\""; }
  static int64_t numel(const Buffer* b) { return b->numel(); }
  static int64_t cols(const Buffer* b) { return matrix_view(*b).cols; }
  static int64_t rows(const Buffer* b) { return matrix_view(*b).rows; }
  static std::string shape_text(const Buffer* b) {
    std::string t = "[";
    for (size_t i = 0; i < b->shape.size(); ++i) t += (i ? ", " : "") + s(b->shape[i]);
    return t + "]";
  }

  void fail(const char* rule, const std::string& text) { cx_.sink.error(rule, task_ref(cx_.program, t_) + ": " + text, {t_}); }
  void fail(const char* rule, const std::string& text, const Buffer* b) {
    cx_.sink.error(rule, task_ref(cx_.program, t_) + ": " + text, {t_}, {position_of(cx_.ix.buffer_of_id, b->id)});
  }
  // `b` must have `want` of something (numel, cols, ...) described by `what`; the reason is
  // `why`, followed by the name of `ref` when given (strings are only built on failure).
  void expect(const Buffer* b, const char* what, int64_t got, int64_t want, const char* why, const Buffer* ref = nullptr) {
    if (b != nullptr && got != want)
      fail("shape", name(b) + " has " + what + " " + s(got) + ", expected " + s(want) + " (" + why +
                        (ref ? " " + name(ref) : std::string()) + ")", b);
  }
  void expect_dtype(const Buffer* b, DType want, const char* why) {
    if (b != nullptr && b->dtype != want)
      fail("contract", name(b) + " is " + std::string(dtype_name(b->dtype)) + ", must be " +
                           std::string(dtype_name(want)) + " (" + why + ")", b);
  }
  void same_numel(const Buffer* a, const Buffer* b) {
    if (a != nullptr && b != nullptr) expect(b, "numel", numel(b), numel(a), "same element count as", a);
  }
  void column_tile(const Buffer* y, const Buffer* w);
  void gemv(const Buffer* x, const Buffer* w, const Buffer* y);
  void attention(bool bias_input = true);
  bool attention_operands(bool bias_input);
  void attention_output();
  void rope_attention();
  void rope_step_operands(std::string_view recipe);
  void attention_gemv_add(const RecipeSpec& r);
  void combine();
  void argmax();
  // The head range [n_off, n_off + N_tile) of ATTENTION_TILE / ATTENTION_COMBINE (defaults 0 and
  // all nh) as [begin, end); tile.bounds naming `what` when it is not inside the nh heads, and
  // nullopt then or when a param is mistyped (reported elsewhere).
  std::optional<std::pair<int64_t, int64_t>> head_tile(int64_t nh, const char* what);
  void gemv_recipe(const RecipeSpec& r);
  void step_gemv(const RecipeSpec& r);
  void mlp_fold();
  void accumulate_flag();
  void rope_operands();
  void cache_row_write(const char* op, size_t cache);

  Context& cx_;
  int32_t t_;
  const Task& task_;
};

// n_off/N_tile must select columns of y (and rows of W: the tile reads W[n_off : n_off+N_tile]).
void TaskShapes::column_tile(const Buffer* y, const Buffer* w) {
  auto n_off = p("n_off"), n_tile = p("N_tile");
  if (!n_off || !n_tile || y == nullptr) return;
  if (*n_off < 0 || *n_tile < 1 || *n_off + *n_tile > cols(y))
    fail("tile.bounds", "tile cols [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") is not inside the " + s(cols(y)) +
                            " columns of " + name(y), y);
  else if (w != nullptr && *n_off + *n_tile > rows(w))
    fail("tile.bounds", "tile rows [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") of weight " + name(w) +
                            " exceed its " + s(rows(w)) + " rows", w);
}

void TaskShapes::gemv(const Buffer* x, const Buffer* w, const Buffer* y) {
  if (auto k = p("K")) {
    if (*k < 1) fail("shape", "K = " + s(*k) + " must be >= 1");
    if (x != nullptr) expect(x, "last dimension", cols(x), *k, "K");
    if (w != nullptr) expect(w, "last dimension", cols(w), *k, "K: weights are [N_out, K]");
  }
  if (w != nullptr && y != nullptr) expect(y, "last dimension", cols(y), rows(w), "N_out, the rows of", w);
  column_tile(y, w);
}

// ATTENTION_TILE and FUSED ROPE_ATTENTION: the operands, then the head tile of the output.
void TaskShapes::attention(bool bias_input) {
  if (attention_operands(bias_input)) attention_output();
}

// q holds n_heads * head_dim values, the caches rows of n_kv_heads * head_dim, the KV window lies
// inside them and the bias (input 3, when `bias_input`) is F32. False when head_dim / n_heads /
// n_kv_heads are missing, mistyped or invalid: checks that depend on them are then skipped.
bool TaskShapes::attention_operands(bool bias_input) {
  auto hd = p("head_dim"), nh = p("n_heads"), nkv = p("n_kv_heads"), start = p("kv_start"), len = p("kv_len");
  if (!hd || !nh || !nkv) return false;
  if (*hd < 1 || *nh < 1 || *nkv < 1 || *nh % *nkv != 0) {
    fail("shape", "head_dim " + s(*hd) + ", n_heads " + s(*nh) + ", n_kv_heads " + s(*nkv) +
                      " must be >= 1 with n_heads a multiple of n_kv_heads");
    return false;
  }
  expect(in(0), "numel", numel(in(0)), *nh * *hd, "n_heads * head_dim");
  for (size_t i = 1; i <= 2; ++i) expect(in(i), "last dimension", cols(in(i)), *nkv * *hd, "n_kv_heads * head_dim");
  if (start && len && (*start < 0 || *len < 0 || *start + *len > rows(in(1))))
    fail("shape", "KV window [" + s(*start) + ", " + s(*start + *len) + ") is not inside the " + s(rows(in(1))) +
                      " rows of " + name(in(1)), in(1));
  if (bias_input && in(3) != nullptr) expect_dtype(in(3), DType::F32, "attention bias");
  return true;
}

// The output of ATTENTION_TILE / ROPE_ATTENTION: head_dim (hd + 2 with PARTIAL_WRITE) values per
// head of the head tile, inside the output or its row m_off. Needs attention_operands() to hold.
void TaskShapes::attention_output() {
  const int64_t hd = *p("head_dim"), nh = *p("n_heads");
  const int64_t flags = p("flags").value_or(0);
  const int64_t width = (flags & kFlagPartialWrite) ? hd + 2 : hd;
  if (flags & kFlagPartialWrite) expect_dtype(out(0), DType::F32, "PARTIAL_WRITE stores {acc, m, l} in F32");
  const auto tile = head_tile(nh, "q heads");
  if (tile && tile->second * width > cols(out(0)))
    fail("tile.bounds", "output cols [" + s(tile->first * width) + ", " + s(tile->second * width) +
                            ") are not inside the " + s(cols(out(0))) + " columns of " + name(out(0)), out(0));
  // The kernels write n_heads * width elements: the whole output, or its row m_off when it is a
  // rank-2 stack of such rows (split-KV partials, docs/OPCODES.md).
  const Buffer* o = out(0);
  if (o == nullptr) return;
  if (o->shape.size() == 2) {
    expect(o, "last dimension", cols(o), nh * width, "a rank-2 output stacks rows of n_heads * width");
    if (auto m_off = p("m_off"); m_off && (*m_off < 0 || *m_off >= rows(o)))
      fail("tile.bounds", "m_off " + s(*m_off) + " is not a row of " + name(o) + " (" + s(rows(o)) + " rows)", o);
  } else {
    expect(o, "numel", numel(o), nh * width, "n_heads * width");
    if (auto m_off = p("m_off"); m_off && *m_off != 0)
      fail("tile.bounds", "m_off " + s(*m_off) + " selects a row, but " + name(o) + " is not a rank-2 stack", o);
  }
}

std::optional<std::pair<int64_t, int64_t>> TaskShapes::head_tile(int64_t nh, const char* what) {
  auto n_off = task_.params.has("n_off") ? p("n_off") : std::optional<int64_t>(0);
  auto n_tile = task_.params.has("N_tile") ? p("N_tile") : std::optional<int64_t>(nh);
  if (!n_off || !n_tile) return std::nullopt;
  if (*n_off < 0 || *n_tile < 1 || *n_off + *n_tile > nh) {
    fail("tile.bounds", std::string(what) + " [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") are not inside the " +
                            s(nh) + " heads");
    return std::nullopt;
  }
  return std::make_pair(*n_off, *n_off + *n_tile);
}

void TaskShapes::combine() {
  for (size_t i = 0; i < task_.inputs.size(); ++i) {
    expect_dtype(in(i), DType::F32, "ATTENTION_COMBINE partials are F32");
    same_numel(in(0), in(i));
  }
  const Buffer* y = out(0);
  if (y == nullptr || in(0) == nullptr) return;
  auto hd = p("head_dim"), nh = p("n_heads");
  const bool tiled = task_.params.has("n_off") || task_.params.has("N_tile");
  if (tiled && (!hd || !nh)) {  // the head tile's columns depend on them (ir/access.cpp)
    fail("shape", "a head tile (n_off / N_tile) needs head_dim and n_heads as integers");
    return;
  }
  // Partials per operand: a rank-2 operand stacks its rows (docs/OPCODES.md).
  const auto stacked_of = [&](const Buffer* b) -> int64_t { return b->shape.size() == 2 ? rows(b) : 1; };
  const int64_t stacked = stacked_of(in(0));
  for (size_t i = 1; i < task_.inputs.size(); ++i)
    if (in(i) != nullptr && stacked_of(in(i)) != stacked)
      fail("shape", name(in(i)) + " stacks a different number of partials than " + name(in(0)), in(i));
  if (stacked * static_cast<int64_t>(task_.inputs.size()) > kMaxCombinePartials)
    fail("shape", "ATTENTION_COMBINE merges at most " + s(kMaxCombinePartials) + " partials; " +
                      s(static_cast<int64_t>(task_.inputs.size())) + " operands of " + s(stacked) + " rows are " +
                      s(stacked * static_cast<int64_t>(task_.inputs.size())));
  if (stacked != 1 && !(hd && nh)) {
    fail("shape", "stacked partials (rank 2) need head_dim and n_heads as integers");
    return;
  }
  if (hd && nh) {
    expect(in(0), stacked != 1 ? "last dimension" : "numel", stacked != 1 ? cols(in(0)) : numel(in(0)),
           *nh * (*hd + 2), "n_heads * (head_dim + 2)");
    expect(y, "numel", numel(y), *nh * *hd, "n_heads * head_dim");
    if (tiled) head_tile(*nh, "heads");
  } else {
    const int64_t two_h = numel(in(0)) - numel(y);
    if (two_h <= 0 || two_h % 2 != 0 || numel(y) % (two_h / 2) != 0)
      fail("shape", "cannot derive heads from partial numel " + s(numel(in(0))) + " and output numel " + s(numel(y)) +
                        " (partials are H*(hd+2), output H*hd)");
  }
}

void TaskShapes::run() {
  const size_t n_in = task_.inputs.size();
  switch (task_.op) {
    case Opcode::Copy: same_numel(in(0), out(0)); break;
    case Opcode::Embed: {
      expect_dtype(in(0), DType::I32, "token ids");
      if (auto h = p("hidden")) {
        expect(in(1), "last dimension", in(1) ? cols(in(1)) : 0, *h, "hidden");
        if (in(0) && out(0)) expect(out(0), "numel", numel(out(0)), mul_sat(numel(in(0)), *h), "ids * hidden");
      }
      break;
    }
    case Opcode::RmsNorm:
    case Opcode::LayerNorm: {
      if (auto h = p("hidden")) {
        expect(in(0), "last dimension", in(0) ? cols(in(0)) : 0, *h, "hidden");
        for (size_t i = 1; i < n_in; ++i) expect(in(i), "numel", numel(in(i)), *h, "hidden");
      }
      same_numel(in(0), out(0));
      break;
    }
    case Opcode::GemvTile:
    case Opcode::GemmTile: {
      gemv(in(0), in(1), out(0));
      if (in(2) != nullptr && in(1) != nullptr) expect(in(2), "numel", numel(in(2)), rows(in(1)), "bias has N_out elements");
      if (task_.op == Opcode::GemmTile && in(0) && out(0)) {
        expect(out(0), "rows", rows(out(0)), rows(in(0)), "M, the rows of", in(0));
        auto m_tile = p("M_tile");
        auto m_off = task_.params.has("m_off") ? p("m_off") : std::optional<int64_t>(0);
        if (m_tile && m_off && (*m_off < 0 || *m_tile < 1 || *m_off + *m_tile > rows(out(0))))
          fail("tile.bounds", "tile rows [" + s(*m_off) + ", " + s(*m_off + *m_tile) + ") is not inside the " +
                                  s(rows(out(0))) + " rows of " + name(out(0)), out(0));
      } else if (in(0) && out(0)) {
        expect(out(0), "rows", rows(out(0)), rows(in(0)), "one output row per input row");
      }
      break;
    }
    case Opcode::AttentionTile: attention(); break;
    case Opcode::Rope:
      rope_operands();
      same_numel(in(0), out(0));
      break;
    case Opcode::SiluMul:
    case Opcode::Add:
    case Opcode::Mul:
    case Opcode::AllreduceShard:
      for (size_t i = 1; i < n_in; ++i) same_numel(in(0), in(i));
      same_numel(in(0), out(0));
      break;
    case Opcode::Gelu:
    case Opcode::Softmax: same_numel(in(0), out(0)); break;
    case Opcode::Dequant: {
      auto q = p("qdtype"), g = p("group");
      if (q && *q != static_cast<int64_t>(DType::I8) && *q != static_cast<int64_t>(DType::I4))
        fail("contract", "qdtype " + s(*q) + " must be 6 (I8) or 7 (I4)");
      if (g && (*g < 1 || (in(0) && cols(in(0)) % *g != 0)))
        fail("shape", "group " + s(*g) + " must be >= 1 and divide K = " + s(in(0) ? cols(in(0)) : 0));
      same_numel(in(0), out(0));
      break;
    }
    case Opcode::KvAppend: cache_row_write("KV_APPEND", 1); break;
    case Opcode::SampleArgmax: argmax(); break;
    case Opcode::AttentionCombine: combine(); break;
    case Opcode::Fused: {
      auto rname = task_.params.get_string("recipe");
      const RecipeSpec* r = rname ? recipe_find(*rname) : nullptr;
      if (r == nullptr || static_cast<int>(n_in) != r->inputs) break;  // params.type / arity report it
      if (r->recipe == FusedRecipe::AttentionGemvAdd) {
        attention_gemv_add(*r);
      } else if (r->gemv) {
        gemv_recipe(*r);
      } else if (r->recipe == FusedRecipe::RopeAttention) {
        rope_attention();
      } else if (r->recipe == FusedRecipe::RmsNormMlpFold) {
        mlp_fold();
      } else {  // ROPE_APPEND [x, inv_freq, cache]: ROPE's operands, KV_APPEND's cache rules
        rope_operands();
        cache_row_write("FUSED ROPE_APPEND", 2);
      }
      if (auto flags = p("flags"); flags && ((*flags >> kFlagRecipeShift) & 0xffff) != 0 &&
                                   ((*flags >> kFlagRecipeShift) & 0xffff) != static_cast<int64_t>(r->recipe))
        fail("contract", "flags bits 16-31 hold recipe id " + s((*flags >> kFlagRecipeShift) & 0xffff) + " but recipe " +
                             std::string(r->name) + " is " + s(static_cast<int64_t>(r->recipe)));
      break;
    }
    case Opcode::Nop: break;
  }
  accumulate_flag();
}

// ACCUMULATE (docs/FOLD.md) makes a task add into its output, so it is accepted only where the
// kernel does that, and RMSNORM_MLP_FOLD needs it: each of its tasks holds a partial sum of the
// whole output. A missing or mistyped flags param is params.required / params.type's business.
void TaskShapes::accumulate_flag() {
  const auto flags = p("flags");
  if (!flags) return;
  const RecipeSpec* r = task_recipe(task_);
  const bool fold = r != nullptr && r->recipe == FusedRecipe::RmsNormMlpFold;
  const bool acc = (*flags & kFlagAccumulate) != 0;
  if (acc && !fold) {
    const std::string op = r != nullptr ? "FUSED " + std::string(r->name) : std::string(op_spec(task_.op).name);
    fail("contract", "flags " + s(*flags) + " set ACCUMULATE (" + s(kFlagAccumulate) + "), which only FUSED "
                     "RMSNORM_MLP_FOLD accepts; " + op + " stores its result");
  }
  if (!acc && fold)
    fail("contract", "FUSED recipe RMSNORM_MLP_FOLD requires ACCUMULATE (" + s(kFlagAccumulate) + ") in flags " +
                         s(*flags) + ": each of its tasks adds a partial sum into the whole output");
}

// FUSED RMSNORM_MLP_FOLD [x, norm_w, w_mlp] -> out (docs/FOLD.md): x [rows, K], norm_w [K], w_mlp
// [I, 3, K] (gate, up and down_proj^T rows of each intermediate column n), the tile of columns
// [n_off, n_off + N_tile) inside I, and out the F32 [rows, K] that every tile adds into.
void TaskShapes::mlp_fold() {
  const Buffer *x = in(0), *norm_w = in(1), *w = in(2), *y = out(0);
  const auto k = p("K");
  if (k) {
    if (*k < 1) fail("shape", "K = " + s(*k) + " must be >= 1");
    expect(x, "last dimension", cols(x), *k, "K");
    expect(norm_w, "numel", numel(norm_w), *k, "norm weight of x: K");
  }
  std::optional<int64_t> inter;  // I, the intermediate size
  if (w->shape.size() != 3) {
    fail("shape", name(w) + " has rank " + s(static_cast<int64_t>(w->shape.size())) +
                      ", expected 3: w_mlp is [I, 3, K] (gate, up and down_proj^T rows of each intermediate column)", w);
  } else {
    inter = w->shape[0];
    expect(w, "middle dimension", w->shape[1], 3, "w_mlp is [I, 3, K]: gate, up and down_proj^T rows");
    if (k) expect(w, "last dimension", w->shape[2], *k, "K: w_mlp is [I, 3, K]");
  }
  const auto n_off = p("n_off"), n_tile = p("N_tile");
  if (n_off && n_tile && (*n_off < 0 || *n_tile < 1 || (inter && *n_off + *n_tile > *inter)))
    fail("tile.bounds", "intermediate columns [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") are not inside the " +
                            (inter ? s(*inter) + " (I) of " + name(w) : std::string("intermediate size")), w);
  expect(y, "rows", rows(y), rows(x), "the same [rows, K] as", x);
  expect(y, "last dimension", cols(y), cols(x), "the same [rows, K] as", x);
  expect_dtype(y, DType::F32, "an ACCUMULATE output: RMSNORM_MLP_FOLD tasks add into it with F32 atomic adds");
}

// SAMPLE_ARGMAX: the whole scan writes one token; a tile (N_tile given, an amk extension) scans
// logits [n_off, n_off + N_tile) of a one-row logits buffer into element m_off of its I32
// candidates; a combine [logits, candidates] picks among the candidates into one token.
void TaskShapes::argmax() {
  const Buffer* logits = in(0);
  const Buffer* y = out(0);
  const bool tile = task_.params.has("N_tile");
  expect_dtype(y, DType::I32, tile ? "a SAMPLE_ARGMAX tile writes a candidate token id" : "SAMPLE_ARGMAX writes a token id");
  if (in(1) != nullptr) {
    expect_dtype(in(1), DType::I32, "SAMPLE_ARGMAX candidates are token ids");
    if (tile) fail("contract", "a SAMPLE_ARGMAX combine (two inputs) takes no N_tile: it reads every candidate");
  }
  if (!tile) {
    if (y && numel(y) != 1) fail("contract", name(y) + " must hold 1 element (the token id)", y);
    return;
  }
  if (logits == nullptr || y == nullptr) return;
  if (rows(logits) != 1) fail("contract", name(logits) + " must be one row for SAMPLE_ARGMAX tiles", logits);
  if (rows(y) != 1) fail("contract", name(y) + " must be one row of candidate slots", y);
  auto n_off = task_.params.has("n_off") ? p("n_off") : std::optional<int64_t>(0), n_tile = p("N_tile");
  auto m_off = task_.params.has("m_off") ? p("m_off") : std::optional<int64_t>(0);
  if (n_off && n_tile && (*n_off < 0 || *n_tile < 1 || *n_off + *n_tile > cols(logits)))
    fail("tile.bounds", "tile cols [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") is not inside the " +
                            s(cols(logits)) + " logits of " + name(logits), logits);
  if (m_off && (*m_off < 0 || *m_off >= cols(y)))
    fail("tile.bounds", "candidate slot m_off " + s(*m_off) + " is not inside the " + s(cols(y)) + " columns of " + name(y), y);
}

// FUSED GEMV recipes: the tile's operands (x or gate, norm_w or up, W, residual).
void TaskShapes::gemv_recipe(const RecipeSpec& r) {
  const bool silu = r.recipe == FusedRecipe::SiluMulGemv || r.recipe == FusedRecipe::SiluMulGemvAdd;
  if (silu) same_numel(in(0), in(1));
  const bool step = r.recipe == FusedRecipe::RmsNormGemvRope || r.recipe == FusedRecipe::RmsNormGemvAppend ||
                    r.recipe == FusedRecipe::RmsNormGemvRopeAppend;
  if (r.recipe == FusedRecipe::RmsNormGemv || step)
    expect(in(1), "numel", numel(in(1)), cols(in(0)), "norm weight of x");
  if (step) step_gemv(r);
  // x (or gate) is input 0, except in ATTENTION_GEMV_ADD: its x is the attention it computes, whose
  // length against K attention_gemv_add() checks.
  const Buffer* x = r.recipe == FusedRecipe::AttentionGemvAdd ? nullptr : in(0);
  gemv(x, in(static_cast<size_t>(r.weight_input)), out(0));
  if (r.residual_input >= 0 && out(0)) {
    const Buffer* residual = in(static_cast<size_t>(r.residual_input));
    expect(residual, "numel", numel(residual), numel(out(0)), "residual matches the output");
  }
  // GEMV_ADD_COPY stores the same tile in its second output: the same shape (any dtype).
  const Buffer* copy = out(1);
  if (copy != nullptr && out(0) != nullptr && copy->shape != out(0)->shape)
    fail("shape", name(copy) + " has shape " + shape_text(copy) + ", expected " + shape_text(out(0)) +
                      " (FUSED " + std::string(r.name) + " writes its tile to both outputs: the same shape as " +
                      name(out(0)) + ")", copy);
}

// The step-position GEMVs, RMSNORM_GEMV's tile at one decode step (docs/ROPE_IN_GEMV.md): x one
// row; STEP_POS in flags (the angle and the cache row are step.pos + pos, pos >= 0). A rotating
// recipe's pairs (n, n + 1) are rotate-half's (i, i + hd/2) only when W's rows were loaded in
// rope-pair order for this head_dim, so W must say so (`rope_pairs`), the tile hold whole pairs
// and whole heads tile W. An append writes a KV_CACHE whose rows are W's outputs.
void TaskShapes::step_gemv(const RecipeSpec& r) {
  const std::string recipe = "FUSED " + std::string(r.name);
  const Buffer *x = in(0), *w = in(2), *y = out(0);
  if (x != nullptr && rows(x) != 1) fail("shape", name(x) + " has " + s(rows(x)) + " rows; " + recipe + " takes one row (a decode step)", x);
  if (auto flags = p("flags"); flags && (*flags & kFlagStepPos) == 0)
    fail("contract", recipe + " requires STEP_POS (" + s(kFlagStepPos) + ") in flags " + s(*flags) +
                         ": its rotation and cache row follow the step's position");
  if (auto pos = p("pos"); pos && *pos < 0) fail("shape", "pos " + s(*pos) + " must be >= 0 (it is added to step.pos)");
  const bool rotates = r.recipe != FusedRecipe::RmsNormGemvAppend;
  if (rotates) {
    auto hd = p("head_dim");
    if (hd && (*hd < 2 || *hd % 2 != 0)) {
      fail("shape", "head_dim " + s(*hd) + " must be even and >= 2 (rotate-half pairs)");
    } else if (hd) {
      expect(in(3), "numel", numel(in(3)), *hd / 2, "inv_freq holds head_dim/2 entries");
      if (w != nullptr && rows(w) % *hd != 0)
        fail("shape", name(w) + " has " + s(rows(w)) + " rows, not a multiple of head_dim " + s(*hd) + " (whole heads)", w);
      if (w != nullptr && w->rope_pairs != *hd)
        fail("contract", name(w) + (w->rope_pairs == 0 ? std::string(" is not in rope-pair order")
                                                       : " is in rope-pair order for head_dim " + s(w->rope_pairs)) +
                             "; " + recipe + " rotates pairs of head_dim " + s(*hd) +
                             ", so W needs \"rope_pairs\": " + s(*hd), w);
    }
    auto n_off = p("n_off"), n_tile = p("N_tile");
    if (n_off && n_tile && (*n_off % 2 != 0 || *n_tile % 2 != 0))
      fail("tile.bounds", "tile [" + s(*n_off) + ", " + s(*n_off + *n_tile) + ") must start and end on an even row: " +
                              recipe + " rotates the pairs (2i, 2i + 1)");
    if (in(3)) expect_dtype(in(3), DType::F32, "inv_freq table");
  }
  if (r.recipe == FusedRecipe::RmsNormGemvRope) return;
  if (y != nullptr && y->kind != BufferKind::KvCache)
    fail("contract", recipe + " writes " + name(y) + ", a " + std::string(buffer_kind_name(y->kind)) +
                         " buffer; it must be a KV_CACHE (it stores row step.pos)", y);
  if (y != nullptr && y->shape.size() != 2)
    fail("shape", name(y) + " has rank " + s(static_cast<int64_t>(y->shape.size())) + ", expected 2 (cache rows)", y);
}

// ROPE's operands, shared with FUSED ROPE_APPEND: x (input 0) is whole heads of head_dim, even
// and >= 2; inv_freq (input 1) is the F32 table of head_dim / 2 entries the kernels require.
void TaskShapes::rope_operands() {
  if (auto hd = p("head_dim")) {
    if (*hd < 2 || *hd % 2 != 0) {
      fail("shape", "head_dim " + s(*hd) + " must be even and >= 2");
    } else {
      if (in(0) && numel(in(0)) % *hd != 0)
        fail("shape", name(in(0)) + " numel " + s(numel(in(0))) + " is not a multiple of head_dim " + s(*hd), in(0));
      if (in(1)) expect(in(1), "numel", numel(in(1)), *hd / 2, "inv_freq holds head_dim/2 entries");
    }
  }
  if (in(1)) expect_dtype(in(1), DType::F32, "inv_freq table");
}

// FUSED ROPE_ATTENTION [q, k_cache, v_cache, k_new, v_new, inv_freq]: ATTENTION_TILE's operands
// (no bias) and output, and the step's operands (rope_step_operands).
void TaskShapes::rope_attention() {
  attention(false);
  rope_step_operands("ROPE_ATTENTION");
}

// The inputs 3-5 of an attention at a decode step whose rope and append have not run (FUSED
// ROPE_ATTENTION, ATTENTION_GEMV_ADD): the step's k / v row (one cache row each), ROPE's table
// for an even head_dim, and the decode-step flags the kernels assume (the fresh row is the step's
// position, the last row of the STEP_KV window).
void TaskShapes::rope_step_operands(std::string_view recipe) {
  auto hd = p("head_dim"), nkv = p("n_kv_heads");
  if (hd && (*hd < 2 || *hd % 2 != 0)) fail("shape", "head_dim " + s(*hd) + " must be even and >= 2 (rotate-half)");
  if (hd && *hd >= 2) expect(in(5), "numel", numel(in(5)), *hd / 2, "inv_freq holds head_dim/2 entries");
  expect_dtype(in(5), DType::F32, "inv_freq table");
  if (hd && nkv && *hd >= 1 && *nkv >= 1)
    for (size_t i = 3; i <= 4; ++i) expect(in(i), "numel", numel(in(i)), *hd * *nkv, "the step's row: n_kv_heads * head_dim");
  const int64_t flags = p("flags").value_or(0), need = kFlagStepPos | kFlagStepKv;
  if ((flags & need) != need || p("pos").value_or(0) != 0)
    fail("contract", "FUSED " + std::string(recipe) + " attends at the decode step: flags must set STEP_POS (4) and "
                     "STEP_KV (8) and pos must be 0 (flags " + s(flags & 0xffff) + ", pos " + s(p("pos").value_or(0)) + ")");
}

// FUSED ATTENTION_GEMV_ADD [q, k_cache, v_cache, k_new, v_new, inv_freq, W, residual] -> out
// (docs/ATTENTION_IN_O.md): ROPE_ATTENTION's operand rules on inputs 0-5, then GEMV_ADD's on W,
// residual and out, with the attention output as x: n_heads * head_dim values in one row. Its
// n_off / N_tile are the GEMV's tile; the attention always covers every head and stays on chip,
// so there is no head tile and nothing to store partials in.
void TaskShapes::attention_gemv_add(const RecipeSpec& r) {
  const bool heads_ok = attention_operands(false);
  rope_step_operands(r.name);
  if (auto flags = p("flags"); flags && (*flags & kFlagPartialWrite))
    fail("contract", "FUSED " + std::string(r.name) + " takes no PARTIAL_WRITE (" + s(kFlagPartialWrite) + ") in flags " +
                         s(*flags & 0xffff) + ": its attention over every head is the GEMV's x, never stored as partials");
  const auto k = p("K");
  if (heads_ok && k) {
    const int64_t attn = *p("n_heads") * *p("head_dim");
    if (*k != attn)
      fail("shape", "K = " + s(*k) + " must equal n_heads * head_dim = " + s(attn) +
                        ": the GEMV's x is the attention output over every head");
  }
  gemv_recipe(r);
  expect(out(0), "rows", rows(out(0)), 1, "one row: the GEMV's x is the attention output of one decode step");
}

// A task that writes one row of a KV cache (KV_APPEND, FUSED ROPE_APPEND): its output is its
// input `cache`, a KV_CACHE; input 0 is one cache row; pos is a row of it.
void TaskShapes::cache_row_write(const char* op, size_t cache) {
  const Buffer* c = in(cache);
  if (out(0) && c != nullptr && task_.outputs[0] != task_.inputs[cache])
    fail("contract", std::string(op) + " must write its input " + s(static_cast<int64_t>(cache)) +
                         " (the cache), but writes " + name(out(0)), out(0));
  if (out(0) && out(0)->kind != BufferKind::KvCache)
    fail("contract", std::string(op) + " writes " + name(out(0)) + ", a " +
                         std::string(buffer_kind_name(out(0)->kind)) + " buffer; it must be a KV_CACHE", out(0));
  if (in(0) && c != nullptr) expect(in(0), "numel", numel(in(0)), cols(c), "one cache row");
  if (auto pos = p("pos"); pos && c != nullptr && (*pos < 0 || *pos >= rows(c)))
    fail("shape", "pos " + s(*pos) + " is not a row of " + name(c) + " (" + s(rows(c)) + " rows)", c);
}

}  // namespace

void check_shapes(Context& cx, int32_t t) {
  const Task& task = cx.program.tasks[t];
  const OpSpec& spec = op_spec(task.op);
  const auto n_in = static_cast<int>(task.inputs.size());
  // Shapes are only meaningful once the operands exist and their count is right.
  if (!cx.task_refs_ok[t] || n_in < spec.min_inputs || n_in > spec.max_inputs ||
      static_cast<int>(task.outputs.size()) != task_outputs_expected(task))
    return;
  for (const BufferId b : task.inputs)
    if (cx.program.buffers[position_of(cx.ix.buffer_of_id, b)].numel() < 0) return;
  for (const BufferId b : task.outputs)
    if (cx.program.buffers[position_of(cx.ix.buffer_of_id, b)].numel() < 0) return;
  TaskShapes(cx, t).run();
}

}  // namespace amk::ir::detail
