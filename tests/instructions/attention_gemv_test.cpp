// tests/instructions/attention_gemv_test.cpp: FUSED ATTENTION_GEMV_ADD (recipe 9) on the CPU
// reference. Its contract: the same values as FUSED ROPE_ATTENTION over every head into a buffer of
// q's dtype followed by FUSED GEMV_ADD of that buffer, bit for bit, without reading cache row p
// (the appends may run at the same time); and its refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "instructions/attention_gemv.h"
#include "ir/opspec.h"
#include "tests/instructions/ref_harness.h"

using namespace amk::test;

static_assert(amk::instructions::kRecipeAttentionGemvAdd == static_cast<int32_t>(amk::ir::FusedRecipe::AttentionGemvAdd),
              "ATTENTION_GEMV_ADD's recipe id differs between instructions/ and ir/");

namespace {

constexpr int32_t kStepFlags = AMK_FLAG_STEP_POS | AMK_FLAG_STEP_KV;
constexpr int32_t kRecipeShift = AMK_FLAG_RECIPE_SHIFT;

struct Case {
  int32_t n_heads, n_kv, hd, seq;
  int32_t dtype;     ///< q, caches, k_new / v_new, W and the residual
  int32_t pos;       ///< the step position
  int32_t kv_start;  ///< the window [kv_start, seq) (STEP_KV trims it to pos + 1)
  int32_t n_off, n_tile, n_out;
};

// The attention half's params on `inst` (ROPE_ATTENTION's; the GEMV's tile is set by the caller).
void set_attention_params(amk_instruction_t& inst, const Case& c) {
  inst.params.head_dim = c.hd;
  inst.params.n_heads = c.n_heads;
  inst.params.n_kv_heads = c.n_kv;
  inst.params.kv_start = c.kv_start;
  inst.params.kv_len = c.seq - c.kv_start;
  inst.params.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.hd)));
  inst.params.pos = 0;
}

std::vector<double> inv_freq(int32_t hd) {
  std::vector<double> inv(static_cast<size_t>(hd / 2));
  for (int32_t i = 0; i < hd / 2; ++i) inv[static_cast<size_t>(i)] = static_cast<float>(std::pow(10000.0, -2.0 * i / hd));
  return inv;
}

// Buffers of one case: the fused task's 8 inputs, its residual / output pair and the unfused
// pair's attention buffer and output.
struct Rig {
  RefProgram p;
  int32_t q, kc, vc, kn, vn, inv, w, res_fused, res_unfused, attn;
};

void build(Rig& r, const Case& c, uint32_t seed) {
  const int64_t row = int64_t{c.n_kv} * c.hd, K = int64_t{c.n_heads} * c.hd;
  r.q = r.p.add(c.dtype, {K}, random_values(static_cast<size_t>(K), seed, c.dtype, -2, 2));
  const auto kcv = random_values(static_cast<size_t>(c.seq * row), seed + 1, c.dtype, -2, 2);
  const auto vcv = random_values(static_cast<size_t>(c.seq * row), seed + 2, c.dtype);
  r.kc = r.p.add(c.dtype, {c.seq, row}, kcv);
  r.vc = r.p.add(c.dtype, {c.seq, row}, vcv);
  // Row p is NaN: a read of it would spoil every output (the fused task must take key p from
  // k_new / v_new, as ROPE_ATTENTION does).
  for (int64_t i = 0; i < row; ++i) {
    r.p.set(r.kc, int64_t{c.pos} * row + i, NAN);
    r.p.set(r.vc, int64_t{c.pos} * row + i, NAN);
  }
  r.kn = r.p.add(c.dtype, {row}, random_values(static_cast<size_t>(row), seed + 3, c.dtype, -2, 2));
  r.vn = r.p.add(c.dtype, {row}, random_values(static_cast<size_t>(row), seed + 4, c.dtype));
  r.inv = r.p.add(AMK_DTYPE_F32, {c.hd / 2}, inv_freq(c.hd));
  r.w = r.p.add(c.dtype, {c.n_out, K}, random_values(static_cast<size_t>(c.n_out * K), seed + 5, c.dtype, -0.5, 0.5));
  const auto resv = random_values(static_cast<size_t>(c.n_out), seed + 6, c.dtype);
  r.res_fused = r.p.add(c.dtype, {c.n_out}, resv);
  r.res_unfused = r.p.add(c.dtype, {c.n_out}, resv);
  r.attn = r.p.add(c.dtype, {K});
  r.p.set_step(c.pos);
}

amk_instruction_t fused_inst(const Rig& r, const Case& c) {
  auto inst = make_inst(AMK_OP_FUSED, {r.q, r.kc, r.vc, r.kn, r.vn, r.inv, r.w, r.res_fused}, {r.res_fused});
  set_attention_params(inst, c);
  inst.params.K = c.n_heads * c.hd;
  inst.params.n_off = c.n_off;
  inst.params.N_tile = c.n_tile;
  inst.params.flags = kStepFlags | (amk::instructions::kRecipeAttentionGemvAdd << kRecipeShift);
  return inst;
}

// The unfused pair: ROPE_ATTENTION of every head into `attn`, then GEMV_ADD in place.
void run_unfused(Rig& r, const Case& c) {
  auto attention = make_inst(AMK_OP_FUSED, {r.q, r.kc, r.vc, r.kn, r.vn, r.inv}, {r.attn});
  set_attention_params(attention, c);
  attention.params.flags = kStepFlags | (amk::instructions::kRecipeRopeAttention << kRecipeShift);
  REQUIRE(r.p.run(attention) == AMK_DEVERR_NONE);
  auto gemv = make_inst(AMK_OP_FUSED, {r.attn, r.w, r.res_unfused}, {r.res_unfused});
  gemv.params.K = c.n_heads * c.hd;
  gemv.params.n_off = c.n_off;
  gemv.params.N_tile = c.n_tile;
  gemv.params.flags = amk::instructions::kRecipeGemvAdd << kRecipeShift;
  REQUIRE(r.p.run(gemv) == AMK_DEVERR_NONE);
}

void check_equals_unfused(const Case& c) {
  INFO("heads " << c.n_heads << "/" << c.n_kv << " hd " << c.hd << " dtype " << c.dtype << " pos " << c.pos
                << " window from " << c.kv_start << " tile [" << c.n_off << ", " << c.n_off + c.n_tile << ") of "
                << c.n_out);
  Rig r;
  build(r, c, 700u + static_cast<uint32_t>(c.pos));
  const auto kc_before = r.p.values(r.kc);
  REQUIRE(r.p.run(fused_inst(r, c)) == AMK_DEVERR_NONE);
  run_unfused(r, c);
  const auto got = r.p.values(r.res_fused), want = r.p.values(r.res_unfused);
  REQUIRE(got.size() == want.size());
  size_t changed = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    REQUIRE_FALSE(std::isnan(got[i]));
    CHECK(got[i] == want[i]);  // the same code on the same inputs: bit for bit
  }
  // Outside the tile the residual is untouched; inside, the attention moved it.
  Rig fresh;
  build(fresh, c, 700u + static_cast<uint32_t>(c.pos));
  const auto resv = fresh.p.values(fresh.res_fused);
  for (int32_t n = 0; n < c.n_out; ++n) {
    const bool inside = n >= c.n_off && n < c.n_off + c.n_tile;
    if (!inside) CHECK(got[static_cast<size_t>(n)] == resv[static_cast<size_t>(n)]);
    else if (got[static_cast<size_t>(n)] != resv[static_cast<size_t>(n)]) ++changed;
  }
  CHECK(changed >= static_cast<size_t>(c.n_tile) - 1);
  // The caches are read only (row p still NaN).
  const auto kc_after = r.p.values(r.kc);
  for (size_t i = 0; i < kc_after.size(); ++i)
    if (!std::isnan(kc_before[i])) REQUIRE(kc_after[i] == kc_before[i]);
  CHECK(r.p.guards_intact());
}

}  // namespace

TEST_CASE("FUSED ATTENTION_GEMV_ADD equals ROPE_ATTENTION of every head then GEMV_ADD, bit for bit",
          "[instructions][op:fused][op:attention_tile]") {
  // GQA groups 4, 1 and 8; bf16 (the lowered programs), f16 and f32; a step mid-cache, the first
  // step (the fresh key alone) and a window that starts past row 0.
  check_equals_unfused(Case{8, 2, 64, 24, AMK_DTYPE_BF16, 13, 0, 3, 5, 16});
  check_equals_unfused(Case{8, 2, 64, 24, AMK_DTYPE_BF16, 0, 0, 0, 16, 16});
  check_equals_unfused(Case{4, 4, 32, 20, AMK_DTYPE_F32, 19, 6, 1, 2, 7});
  check_equals_unfused(Case{8, 1, 64, 16, AMK_DTYPE_F16, 9, 2, 10, 6, 24});
}

TEST_CASE("FUSED ATTENTION_GEMV_ADD refuses what its halves cannot run", "[instructions][op:fused]") {
  const Case c{8, 2, 64, 24, AMK_DTYPE_BF16, 13, 0, 0, 8, 16};
  Rig r;
  build(r, c, 900u);
  const auto base = fused_inst(r, c);
  SECTION("K is not n_heads * head_dim") {
    auto inst = base;
    inst.params.K = 256;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("seven inputs") {
    auto inst = base;
    inst.n_inputs = 7;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("PARTIAL_WRITE") {
    auto inst = base;
    inst.params.flags |= AMK_FLAG_PARTIAL_WRITE;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("no STEP_KV (the attention half's rule)") {
    auto inst = base;
    inst.params.flags &= ~AMK_FLAG_STEP_KV;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("a tile past W's rows (the GEMV half's rule)") {
    auto inst = base;
    inst.params.n_off = 10;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("an input index outside the table") {
    auto inst = base;
    inst.inputs[6] = 999;
    CHECK(r.p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("p outside the cache") {
    r.p.set_step(24);
    CHECK(r.p.run(base) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  }
  // A refused task writes nothing.
  const auto resv = r.p.values(r.res_fused);
  Rig fresh;
  build(fresh, c, 900u);
  CHECK(resv == fresh.p.values(fresh.res_fused));
}

TEST_CASE("ATTENTION_GEMV_ADD's streamed plan takes the one layout the GPU path has", "[instructions][op:fused]") {
  using namespace amk::instructions;
  const Case c{8, 2, 64, 24, AMK_DTYPE_BF16, 13, 0, 0, 8, 16};
  Rig r;
  build(r, c, 901u);
  const auto inst = fused_inst(r, c);
  std::vector<uint32_t> row(512);
  AttentionGemvSplit s;
  amk_program_t view;
  REQUIRE(split_attention_gemv(r.p.view(), inst, row.data(), &s, &view) == AMK_DEVERR_NONE);
  AttentionTileArgs a;
  REQUIRE(decode_attention_tile_static(view, s.attention, &a) == AMK_DEVERR_NONE);
  CHECK(a.h_begin == 0);
  CHECK(a.h_end == 8);
  AttentionRowPlan rp;
  amk_step_t step{};
  step.pos = 13;
  REQUIRE(attention_row_plan(a, inst.params, &step, &rp));
  CHECK(rp.group == 4);
  CHECK(rp.kv_end == 24);
  int32_t j0 = -1, j1 = -1, pos = -1;
  bool fresh = false;
  REQUIRE(attention_row_window(rp, &j0, &j1, &pos, &fresh) == AMK_DEVERR_NONE);
  CHECK(j0 == 0);
  CHECK(j1 == 13);  // rows 0..12 from the cache, key 13 fresh
  CHECK(fresh);
  CHECK(pos == 13);
  step.pos = 24;
  CHECK(attention_row_window(rp, &j0, &j1, &pos, &fresh) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  SECTION("head_dim 32 has no streamed path") {
    AttentionTileArgs b = a;
    b.head_dim = 32;
    CHECK_FALSE(attention_row_plan(b, inst.params, &step, &rp));
  }
  SECTION("an F32 cache has no streamed path") {
    AttentionTileArgs b = a;
    b.k.dtype = b.v.dtype = AMK_DTYPE_F32;
    CHECK_FALSE(attention_row_plan(b, inst.params, &step, &rp));
  }
}
