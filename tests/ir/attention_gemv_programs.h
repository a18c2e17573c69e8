// tests/ir/attention_gemv_programs.h: one decode layer's attention and o_proj as FUSED
// ATTENTION_GEMV_ADD tiles (recipe 9, docs/ATTENTION_IN_O.md), shared by the validator tests and
// the golden fixtures. h is written, q / k / v GEMVs read it, every o_proj tile recomputes the
// attention over all 4 q heads (2 KV heads of head_dim 4, caches of 16 rows) and adds its W_o tile
// into h in place, while the step's appends write cache row step.pos beside them; a reader copies h.
#pragma once
#include <cstdint>
#include <string>

#include "ir/params.h"
#include "ir/program_builder.h"

namespace amk::testing {

/// flags of an ATTENTION_GEMV_ADD task: the decode-step bits it requires and the recipe id 9.
inline constexpr int64_t kAttentionGemvFlags = ir::kFlagStepPos | ir::kFlagStepKv | int64_t{9} << ir::kFlagRecipeShift;
inline constexpr int64_t kRopeAppendFlags = ir::kFlagStepPos | int64_t{5} << ir::kFlagRecipeShift;

// Buffer ids: 0 x, 1 h, 2 W_q, 3 W_k, 4 W_v, 5 q, 6 k_new, 7 v_new, 8 k_cache, 9 v_cache,
// 10 inv_freq, 11 W_o, 12 y. Counters: 0 h ready, 1 q k v ready, 2 o_proj tiles.
// standard() adds tasks 0 embed, 1-3 q / k / v_proj, 4 o.t0, 5 o.t1, 6 rope_k, 7 append_v, 8 read.
// Build it in place (TaskRefs hold the builder by reference).
struct AttentionGemvLayer {
  ProgramBuilder b;
  const int x = b.input("x", {8});
  const int h = b.act("h", {8});
  const int wq = b.weight("W_q", {16, 8});
  const int wk = b.weight("W_k", {8, 8});
  const int wv = b.weight("W_v", {8, 8});
  const int q = b.act("q", {16});
  const int kn = b.act("k_new", {8});
  const int vn = b.act("v_new", {8});
  const int kc = b.kv("k_cache", {16, 8});
  const int vc = b.kv("v_cache", {16, 8});
  const int f = b.buffer("inv_freq", ir::BufferKind::Const, {2});
  const int wo = b.weight("W_o", {8, 16});
  const int y = b.output("y", {8});
  const int c_h = b.counter("h ready");
  const int c_qkv = b.counter("q k v ready");
  const int c_o = b.counter("o_proj tiles");

  /// Tasks 0-3: h from x, then q / k_new / v_new from h, all three signalling c_qkv.
  void producers() {
    b.copy("embed", x, h).signal(c_h);
    b.gemv("q_proj", h, wq, q, 8, 0, 16).wait(c_h, 1).signal(c_qkv);
    b.gemv("k_proj", h, wk, kn, 8, 0, 8).wait(c_h, 1).signal(c_qkv);
    b.gemv("v_proj", h, wv, vn, 8, 0, 8).wait(c_h, 1).signal(c_qkv);
  }
  /// An o_proj tile: h[n_off, n_off + n_tile) += attention(every head) . W_o rows, after q / k / v.
  ProgramBuilder::TaskRef o_tile(const std::string& label, int64_t n_off, int64_t n_tile) {
    return b.task(ir::Opcode::Fused, label).in({q, kc, vc, kn, vn, f, wo, h}).out({h})
        .param("recipe", std::string("ATTENTION_GEMV_ADD")).i("head_dim", 4).i("n_heads", 4).i("n_kv_heads", 2)
        .i("kv_start", 0).i("kv_len", 16).param("scale", 0.5).i("pos", 0).i("flags", kAttentionGemvFlags)
        .tile(16, n_off, n_tile).wait(c_qkv, 3).signal(c_o);
  }
  /// The step's appends of cache row step.pos, unordered with the o_proj tiles.
  ProgramBuilder::TaskRef rope_append_k() {
    return b.task(ir::Opcode::Fused, "rope_k").in({kn, f, kc}).out({kc}).param("recipe", std::string("ROPE_APPEND"))
        .i("head_dim", 4).i("pos", 0).i("flags", kRopeAppendFlags).wait(c_qkv, 3);
  }
  ProgramBuilder::TaskRef append_v() {
    return b.task(ir::Opcode::KvAppend, "append_v").in({vn, vc}).out({vc}).i("pos", 0).i("flags", ir::kFlagStepPos)
        .wait(c_qkv, 3);
  }
  /// The accepted layer: two o_proj tiles covering h's 8 columns.
  void standard() {
    producers();
    o_tile("o.t0", 0, 4);
    o_tile("o.t1", 4, 4);
    rope_append_k();
    append_v();
    b.copy("read", h, y).wait(c_o, 2);
  }
};

}  // namespace amk::testing
