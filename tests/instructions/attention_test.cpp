// tests/instructions/attention_test.cpp: ATTENTION_TILE and ATTENTION_COMBINE against an fp64
// attention written here: head_dim 64 / 128, GQA ratios 1 / 4 / 8, head ranges, bias masks,
// PARTIAL_WRITE partials, split-KV merged == unsplit, empty partitions and STEP_KV windows; FUSED
// ROPE_ATTENTION against the unfused ROPE / appends / ATTENTION_TILE it replaces, and its refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "instructions/task_blob.h"
#include "ir/enums.h"
#include "tests/instructions/ref_harness.h"

// The validator refuses what the kernels cannot merge, and no more.
static_assert(amk::instructions::kMaxCombinePartials == amk::ir::kMaxCombinePartials,
              "ATTENTION_COMBINE's partial limit differs between instructions/ and ir/");

using namespace amk::test;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Shape {
  int64_t n_heads, n_kv, hd, seq;
};

// Per head: acc (unnormalised), m, l and their error magnitudes, over keys [j0, j1).
struct HeadRef {
  std::vector<double> acc, acc_mag;
  double m = kNegInf, l = 0;
};

std::vector<HeadRef> attention_fp64(const Shape& s, const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, const std::vector<double>* bias, int64_t j0,
                                    int64_t j1, double scale) {
  std::vector<HeadRef> out(s.n_heads);
  const int64_t row = s.n_kv * s.hd;
  for (int64_t h = 0; h < s.n_heads; ++h) {
    const int64_t g = h / (s.n_heads / s.n_kv);
    HeadRef& r = out[h];
    r.acc.assign(s.hd, 0.0);
    r.acc_mag.assign(s.hd, 0.0);
    std::vector<double> sc;
    for (int64_t j = j0; j < j1; ++j) {
      double d = 0;
      for (int64_t i = 0; i < s.hd; ++i) d += q[h * s.hd + i] * k[j * row + g * s.hd + i];
      sc.push_back(d * scale + (bias ? (*bias)[j] : 0.0));
      r.m = std::fmax(r.m, sc.back());
    }
    if (r.m == kNegInf) continue;
    for (int64_t j = j0; j < j1; ++j) {
      const double p = std::exp(sc[j - j0] - r.m);
      r.l += p;
      for (int64_t i = 0; i < s.hd; ++i) {
        r.acc[i] += p * v[j * row + g * s.hd + i];
        r.acc_mag[i] += p * std::fabs(v[j * row + g * s.hd + i]);
      }
    }
  }
  return out;
}

// Normalised output of heads [h0, h1) into a flat [n_heads * hd] vector; NaN elsewhere.
void normalised(const std::vector<HeadRef>& ref, int64_t hd, int64_t h0, int64_t h1, std::vector<double>* want,
                std::vector<double>* mag) {
  want->assign(ref.size() * hd, NAN);
  mag->assign(ref.size() * hd, 0);
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t i = 0; i < hd; ++i) {
      (*want)[h * hd + i] = ref[h].l > 0 ? ref[h].acc[i] / ref[h].l : 0.0;
      // fp32 score errors (~|s| * 2^-24 each) move the softmax weights relatively; 4x margin
      (*mag)[h * hd + i] = ref[h].l > 0 ? 4 * ref[h].acc_mag[i] / ref[h].l : 0.0;
    }
}

amk_instruction_t attention_inst(int32_t q, int32_t k, int32_t v, int32_t out, const Shape& s, int64_t kv_start,
                                 int64_t kv_len, int32_t flags, int32_t bias = -1) {
  auto inst = bias >= 0 ? make_inst(AMK_OP_ATTENTION_TILE, {q, k, v, bias}, {out})
                        : make_inst(AMK_OP_ATTENTION_TILE, {q, k, v}, {out});
  inst.params.head_dim = static_cast<int32_t>(s.hd);
  inst.params.n_heads = static_cast<int32_t>(s.n_heads);
  inst.params.n_kv_heads = static_cast<int32_t>(s.n_kv);
  inst.params.kv_start = static_cast<int32_t>(kv_start);
  inst.params.kv_len = static_cast<int32_t>(kv_len);
  inst.params.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hd)));
  inst.params.flags = flags;
  return inst;
}

void check_subset(const RefProgram& p, int32_t out, int32_t dt, const std::vector<double>& want,
                  const std::vector<double>& mag) {
  const auto got = p.values(out);
  std::vector<double> g, w, t;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) continue;
    g.push_back(got[i]);
    w.push_back(want[i]);
    t.push_back(tolerance(dt, want[i], mag[i]));
  }
  CHECK(count_mismatches("attention", g, w, t) == 0);
  CHECK(p.guards_intact());
}

}  // namespace

TEST_CASE("ATTENTION_TILE: GQA ratios 1, 4, 8 at head_dim 64 and 128", "[instructions][op:attention_tile]") {
  for (int64_t hd : {64, 128}) {
    for (int64_t n_kv : {8, 2, 1}) {
      for (int32_t odt : {AMK_DTYPE_F32, AMK_DTYPE_BF16}) {
        const Shape s{8, n_kv, hd, 37};
        RefProgram p;
        const auto qv = random_values(s.n_heads * hd, 60 + hd, AMK_DTYPE_BF16, -2, 2);
        const auto kv = random_values(s.seq * n_kv * hd, 61 + n_kv, AMK_DTYPE_BF16, -2, 2);
        const auto vv = random_values(s.seq * n_kv * hd, 62 + n_kv, AMK_DTYPE_BF16);
        const int32_t q = p.add(AMK_DTYPE_BF16, {s.n_heads * hd}, qv);
        const int32_t k = p.add(AMK_DTYPE_BF16, {s.seq, n_kv * hd}, kv), v = p.add(AMK_DTYPE_BF16, {s.seq, n_kv * hd}, vv);
        const int32_t out = p.add(odt, {1, s.n_heads * hd});
        p.poison(out);
        auto inst = attention_inst(q, k, v, out, s, 3, 29, 0);
        inst.params.n_off = 2;  // heads [2, 5) only
        inst.params.N_tile = 3;
        REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
        const double scale = inst.params.scale;
        std::vector<double> want, mag;
        normalised(attention_fp64(s, qv, kv, vv, nullptr, 3, 32, scale), hd, 2, 5, &want, &mag);
        INFO("hd " << hd << " n_kv " << n_kv << " out dtype " << odt);
        check_subset(p, out, odt, want, mag);
        // heads outside the range keep the poison bytes
        const std::vector<double> before = p.values(out);
        RefProgram fresh;
        const int32_t poison_ref = fresh.add(odt, {1});
        fresh.poison(poison_ref);
        const double poison_value = fresh.get(poison_ref, 0);
        for (int64_t i = 0; i < s.n_heads * hd; ++i)
          if (i < 2 * hd || i >= 5 * hd) CHECK(before[i] == poison_value);
        // N_tile = 0 means every head
        inst.params.n_off = 0;
        inst.params.N_tile = 0;
        REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
        normalised(attention_fp64(s, qv, kv, vv, nullptr, 3, 32, scale), hd, 0, s.n_heads, &want, &mag);
        check_subset(p, out, odt, want, mag);
      }
    }
  }
}

TEST_CASE("ATTENTION_TILE: bias masks keys; a fully masked window gives zeros", "[instructions][op:attention_tile]") {
  const Shape s{4, 2, 64, 10};
  RefProgram p;
  const auto qv = random_values(4 * 64, 70, AMK_DTYPE_F32), kv = random_values(10 * 128, 71, AMK_DTYPE_F32);
  const auto vv = random_values(10 * 128, 72, AMK_DTYPE_F32);
  std::vector<double> bv = {0, kNegInf, 0.5, kNegInf, -1, 0, 0, kNegInf, kNegInf, 2};
  const int32_t q = p.add(AMK_DTYPE_F32, {256}, qv), k = p.add(AMK_DTYPE_F32, {10, 128}, kv);
  const int32_t v = p.add(AMK_DTYPE_F32, {10, 128}, vv), b = p.add(AMK_DTYPE_F32, {10}, bv);
  const int32_t out = p.add(AMK_DTYPE_F32, {256});
  REQUIRE(p.run(attention_inst(q, k, v, out, s, 0, 10, 0, b)) == AMK_DEVERR_NONE);
  std::vector<double> want, mag;
  normalised(attention_fp64(s, qv, kv, vv, &bv, 0, 10, 0.125), 64, 0, 4, &want, &mag);
  check_subset(p, out, AMK_DTYPE_F32, want, mag);
  REQUIRE(p.run(attention_inst(q, k, v, out, s, 7, 2, 0, b)) == AMK_DEVERR_NONE);  // keys 7, 8: both -inf
  CHECK(p.values(out) == std::vector<double>(256, 0.0));
}

TEST_CASE("ATTENTION_TILE partials merged by ATTENTION_COMBINE equal unsplit attention",
          "[instructions][op:attention_tile][op:attention_combine]") {
  for (int64_t n_kv : {4, 1}) {
    const Shape s{4, n_kv, 64, 37};
    const int64_t W = s.hd + 2;
    RefProgram p;
    const auto qv = random_values(4 * 64, 80, AMK_DTYPE_BF16, -3, 3);
    const auto kv = random_values(37 * n_kv * 64, 81, AMK_DTYPE_BF16, -3, 3);
    const auto vv = random_values(37 * n_kv * 64, 82, AMK_DTYPE_BF16);
    const int32_t q = p.add(AMK_DTYPE_BF16, {256}, qv), k = p.add(AMK_DTYPE_BF16, {37, n_kv * 64}, kv);
    const int32_t v = p.add(AMK_DTYPE_BF16, {37, n_kv * 64}, vv);
    const int64_t bounds[][2] = {{0, 13}, {13, 13}, {26, 11}, {37, 0}};  // the last is empty
    std::vector<int32_t> parts;
    for (const auto& b : bounds) {
      parts.push_back(p.add(AMK_DTYPE_F32, {4 * W}));
      REQUIRE(p.run(attention_inst(q, k, v, parts.back(), s, b[0], b[1], AMK_FLAG_PARTIAL_WRITE)) == AMK_DEVERR_NONE);
      const auto ref = attention_fp64(s, qv, kv, vv, nullptr, b[0], b[0] + b[1], 0.125);
      std::vector<double> want(4 * W), mag(4 * W);
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t i = 0; i < 64; ++i) {
          want[h * W + i] = ref[h].acc[i];
          mag[h * W + i] = 4 * ref[h].acc_mag[i];
        }
        want[h * W + 64] = ref[h].m;
        mag[h * W + 64] = 64 * 9 * 0.125;  // sum |q k| * scale bounds the score's error
        want[h * W + 65] = ref[h].l;
        mag[h * W + 65] = 4 * ref[h].l;
      }
      INFO("partition [" << b[0] << ", +" << b[1] << ")");
      check_subset(p, parts.back(), AMK_DTYPE_F32, want, mag);
    }
    const int32_t y = p.add(AMK_DTYPE_F32, {256}), full = p.add(AMK_DTYPE_F32, {256});
    REQUIRE(p.run(make_inst(AMK_OP_ATTENTION_COMBINE, parts, {y})) == AMK_DEVERR_NONE);  // shapes derived
    REQUIRE(p.run(attention_inst(q, k, v, full, s, 0, 37, 0)) == AMK_DEVERR_NONE);
    std::vector<double> want, mag;
    normalised(attention_fp64(s, qv, kv, vv, nullptr, 0, 37, 0.125), 64, 0, 4, &want, &mag);
    check_subset(p, y, AMK_DTYPE_F32, want, mag);
    check_subset(p, full, AMK_DTYPE_F32, want, mag);
    const auto a = p.values(y), b = p.values(full);
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-5 * mag[i] + 1e-7);
  }
}

TEST_CASE("ATTENTION_TILE rows of stacked partials (m_off) merge as separate partials do",
          "[instructions][op:attention_tile][op:attention_combine]") {
  const Shape s{4, 2, 64, 40};
  const int64_t W = s.hd + 2;
  RefProgram p;
  const auto qv = random_values(4 * 64, 83, AMK_DTYPE_BF16, -3, 3);
  const auto kv = random_values(40 * 2 * 64, 84, AMK_DTYPE_BF16, -3, 3);
  const auto vv = random_values(40 * 2 * 64, 85, AMK_DTYPE_BF16);
  const int32_t q = p.add(AMK_DTYPE_BF16, {256}, qv), k = p.add(AMK_DTYPE_BF16, {40, 128}, kv);
  const int32_t v = p.add(AMK_DTYPE_BF16, {40, 128}, vv);
  // Four partitions: separate partials, and the same four as rows of two [2, 4W] stacks (partition
  // j is row j / 2 of operand j % 2: the combine's order), each head group written by its own task.
  std::vector<int32_t> separate, stacked{p.add(AMK_DTYPE_F32, {2, 4 * W}), p.add(AMK_DTYPE_F32, {2, 4 * W})};
  for (int64_t j = 0; j < 4; ++j) {
    separate.push_back(p.add(AMK_DTYPE_F32, {4 * W}));
    REQUIRE(p.run(attention_inst(q, k, v, separate.back(), s, 10 * j, 10, AMK_FLAG_PARTIAL_WRITE)) == AMK_DEVERR_NONE);
    for (int64_t h0 : {0, 2}) {
      auto inst = attention_inst(q, k, v, stacked[static_cast<size_t>(j % 2)], s, 10 * j, 10, AMK_FLAG_PARTIAL_WRITE);
      inst.params.n_off = static_cast<int32_t>(h0);
      inst.params.N_tile = 2;
      inst.params.m_off = static_cast<int32_t>(j / 2);
      REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    }
    const auto row = p.values(stacked[static_cast<size_t>(j % 2)]);
    const auto alone = p.values(separate.back());
    for (int64_t i = 0; i < 4 * W; ++i) CHECK(row[static_cast<size_t>((j / 2) * 4 * W + i)] == alone[static_cast<size_t>(i)]);
  }
  const int32_t y_sep = p.add(AMK_DTYPE_F32, {256}), y_stack = p.add(AMK_DTYPE_F32, {256});
  auto comb = make_inst(AMK_OP_ATTENTION_COMBINE, separate, {y_sep});
  comb.params.head_dim = 64;
  comb.params.n_heads = 4;
  REQUIRE(p.run(comb) == AMK_DEVERR_NONE);
  auto comb2 = make_inst(AMK_OP_ATTENTION_COMBINE, stacked, {y_stack});
  comb2.params.head_dim = 64;
  comb2.params.n_heads = 4;
  REQUIRE(p.run(comb2) == AMK_DEVERR_NONE);
  // The same partials: equal up to the grouping of the sums (each row's, then the rows').
  const auto ys = p.values(y_stack), yp = p.values(y_sep);
  for (size_t i = 0; i < ys.size(); ++i) CHECK(std::fabs(ys[i] - yp[i]) <= 1e-6 * std::fabs(yp[i]) + 1e-7);
  std::vector<double> want, mag;
  normalised(attention_fp64(s, qv, kv, vv, nullptr, 0, 40, 0.125), 64, 0, 4, &want, &mag);
  check_subset(p, y_stack, AMK_DTYPE_F32, want, mag);

  // Refused: a row past the stack, operands stacking different counts, more than 16 partials.
  auto past = attention_inst(q, k, v, stacked[0], s, 0, 10, AMK_FLAG_PARTIAL_WRITE);
  past.params.m_off = 2;
  CHECK(p.run(past) == AMK_DEVERR_BAD_PARAMS);
  const int32_t flat = p.add(AMK_DTYPE_F32, {2 * 4 * W});  // as many elements, one row
  auto mixed = make_inst(AMK_OP_ATTENTION_COMBINE, {stacked[0], flat}, {y_stack});
  mixed.params.head_dim = 64;
  mixed.params.n_heads = 4;
  CHECK(p.run(mixed) == AMK_DEVERR_BAD_PARAMS);
  std::vector<int32_t> many;
  for (int i = 0; i < 6; ++i) many.push_back(p.add(AMK_DTYPE_F32, {3, 4 * W}));  // 18 partials
  auto too_many = make_inst(AMK_OP_ATTENTION_COMBINE, many, {y_stack});
  too_many.params.head_dim = 64;
  too_many.params.n_heads = 4;
  CHECK(p.run(too_many) == AMK_DEVERR_BAD_PARAMS);
}

TEST_CASE("ATTENTION_TILE STEP_KV clips fixed partitions to the live tokens", "[instructions][op:attention_tile]") {
  const Shape s{2, 1, 64, 32};
  RefProgram p;
  const auto qv = random_values(128, 90, AMK_DTYPE_F32), kv = random_values(32 * 64, 91, AMK_DTYPE_F32);
  const auto vv = random_values(32 * 64, 92, AMK_DTYPE_F32);
  const int32_t q = p.add(AMK_DTYPE_F32, {128}, qv), k = p.add(AMK_DTYPE_F32, {32, 64}, kv);
  const int32_t v = p.add(AMK_DTYPE_F32, {32, 64}, vv);
  p.set_step(12);  // tokens 0..12 exist: partitions of 8 -> [0,8), [8,13), empty, empty
  std::vector<int32_t> parts;
  for (int part = 0; part < 4; ++part) {
    parts.push_back(p.add(AMK_DTYPE_F32, {2 * 66}));
    REQUIRE(p.run(attention_inst(q, k, v, parts.back(), s, 8 * part, 8, AMK_FLAG_PARTIAL_WRITE | AMK_FLAG_STEP_KV)) ==
            AMK_DEVERR_NONE);
  }
  for (int64_t h = 0; h < 2; ++h) {  // empty partitions: m = -inf, l = 0, acc = 0
    CHECK(p.get(parts[2], h * 66 + 64) == kNegInf);
    CHECK(p.get(parts[3], h * 66 + 65) == 0.0);
    CHECK(p.get(parts[2], h * 66 + 3) == 0.0);
  }
  const int32_t y = p.add(AMK_DTYPE_BF16, {128});
  auto comb = make_inst(AMK_OP_ATTENTION_COMBINE, parts, {y});
  comb.params.head_dim = 64;
  REQUIRE(p.run(comb) == AMK_DEVERR_NONE);
  std::vector<double> want, mag;
  normalised(attention_fp64(s, qv, kv, vv, nullptr, 0, 13, 0.125), 64, 0, 2, &want, &mag);
  check_subset(p, y, AMK_DTYPE_BF16, want, mag);
  // without STEP_KV the same instruction would read all 8 keys of partition 1
  const int32_t unclipped = p.add(AMK_DTYPE_F32, {128});
  REQUIRE(p.run(attention_inst(q, k, v, unclipped, s, 8, 8, 0)) == AMK_DEVERR_NONE);
  normalised(attention_fp64(s, qv, kv, vv, nullptr, 8, 16, 0.125), 64, 0, 2, &want, &mag);
  check_subset(p, unclipped, AMK_DTYPE_F32, want, mag);
  // a capacity past the cache is fine while the live window fits; past it, INDEX_OUT_OF_RANGE
  const int32_t o2 = p.add(AMK_DTYPE_F32, {128});
  p.set_step(28);
  CHECK(p.run(attention_inst(q, k, v, o2, s, 24, 16, AMK_FLAG_STEP_KV)) == AMK_DEVERR_NONE);
  p.set_step(40);
  p.poison(o2);
  CHECK(p.run(attention_inst(q, k, v, o2, s, 24, 16, AMK_FLAG_STEP_KV)) == AMK_DEVERR_INDEX_OUT_OF_RANGE);
  CHECK(p.run(attention_inst(q, k, v, o2, s, 24, 16, 0)) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(o2));
}

TEST_CASE("ATTENTION_COMBINE: hand-computed merge, derived shapes, empty heads", "[instructions][op:attention_combine]") {
  RefProgram p;  // H = 2, hd = 2; head 1 is empty in both partials
  const double e = std::exp(-1.0);
  const int32_t p1 = p.add(AMK_DTYPE_F32, {8}, {2, 4, 1, 2, 0, 0, kNegInf, 0});
  const int32_t p2 = p.add(AMK_DTYPE_F32, {8}, {6, 2, 0, 3, 0, 0, kNegInf, 0});
  const int32_t y = p.add(AMK_DTYPE_F32, {4});
  for (int variant = 0; variant < 4; ++variant) {  // params: none, head_dim, n_heads, both
    auto inst = make_inst(AMK_OP_ATTENTION_COMBINE, {p1, p2}, {y});
    inst.params.head_dim = (variant & 1) ? 2 : 0;
    inst.params.n_heads = (variant & 2) ? 2 : 0;
    REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
    // M = 1; w1 = 1, w2 = e^-1: y = (acc1 + e^-1 acc2) / (2 + 3 e^-1)
    check_output(p, y, AMK_DTYPE_F32, {(2 + 6 * e) / (2 + 3 * e), (4 + 2 * e) / (2 + 3 * e), 0, 0});
  }
  // A head tile (n_off / N_tile) merges only its heads and leaves the others' outputs alone.
  auto tile = make_inst(AMK_OP_ATTENTION_COMBINE, {p1, p2}, {y});
  tile.params.head_dim = 2;
  tile.params.n_heads = 2;
  tile.params.N_tile = 1;
  p.poison(y);
  REQUIRE(p.run(tile) == AMK_DEVERR_NONE);
  const double nan = std::nan("");
  check_subset(p, y, AMK_DTYPE_F32, {(2 + 6 * e) / (2 + 3 * e), (4 + 2 * e) / (2 + 3 * e), nan, nan}, {1, 1, 1, 1});
  float poison_value;
  std::memset(&poison_value, kPoison, sizeof poison_value);
  CHECK(p.values(y)[2] == poison_value);  // head 1's outputs keep the poison bytes
  CHECK(p.values(y)[3] == poison_value);
  tile.params.n_off = 1;
  REQUIRE(p.run(tile) == AMK_DEVERR_NONE);  // head 1: empty in both partials
  check_output(p, y, AMK_DTYPE_F32, {(2 + 6 * e) / (2 + 3 * e), (4 + 2 * e) / (2 + 3 * e), 0, 0});
  for (auto [off, n] : {std::pair<int32_t, int32_t>{-1, 1}, {2, 1}, {1, 2}}) {  // heads outside [0, 2)
    tile.params.n_off = off;
    tile.params.N_tile = n;
    CHECK(p.run(tile) == AMK_DEVERR_BAD_PARAMS);
  }
  auto bad = make_inst(AMK_OP_ATTENTION_COMBINE, {p1, p2}, {y});
  bad.params.head_dim = 3;
  p.poison(y);
  CHECK(p.run(bad) == AMK_DEVERR_BAD_PARAMS);
  const int32_t p3 = p.add(AMK_DTYPE_F32, {10});
  CHECK(p.run(make_inst(AMK_OP_ATTENTION_COMBINE, {p1, p3}, {y})) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(y));
}

// ---- FUSED ROPE_ATTENTION (recipe 6) ----------------------------------------------------------------
// Its contract is "the same result as ROPE(q) -> q_rot, ROPE_APPEND(k_new into k_cache row p),
// KV_APPEND(v_new into v_cache row p), ATTENTION_TILE(q_rot, k_cache, v_cache)" at p = step.pos,
// without reading cache row p (the appends may run concurrently). The tests below run both
// sequences on the CPU reference and compare them element by element.

namespace {

constexpr int32_t kRopeAttentionFlags = AMK_FLAG_STEP_POS | AMK_FLAG_STEP_KV | (6 << AMK_FLAG_RECIPE_SHIFT);
constexpr int32_t kRopeAppendRecipe = 5 << AMK_FLAG_RECIPE_SHIFT;

// inv_freq[i] = theta^(-2i/hd), the loader's F32 table (large enough angles at small positions
// that a missing or wrong rotation shows).
std::vector<double> rope_table(int64_t hd, double theta) {
  std::vector<double> inv(static_cast<size_t>(hd / 2));
  for (int64_t i = 0; i < hd / 2; ++i) inv[static_cast<size_t>(i)] = static_cast<float>(std::pow(theta, -2.0 * i / hd));
  return inv;
}

// The FUSED ROPE_ATTENTION instruction [q, k_cache, v_cache, k_new, v_new, inv_freq] -> out with
// ATTENTION_TILE's params and the decode-step flags.
amk_instruction_t rope_attention_inst(const std::vector<int32_t>& ins, int32_t out, const Shape& s, int64_t kv_start,
                                      int64_t kv_len, int32_t extra_flags) {
  auto inst = make_inst(AMK_OP_FUSED, ins, {out});
  inst.params = attention_inst(ins[0], ins[1], ins[2], out, s, kv_start, kv_len, kRopeAttentionFlags | extra_flags).params;
  inst.params.pos = 0;
  return inst;
}

// Dtypes of one equivalence case: q (and q_rot), the caches, and k_new / v_new (the projections'
// outputs; F32 with a bf16 cache makes "rounded to the cache dtype" observable for v too).
struct RopeAttnDtypes {
  int32_t q, cache, fresh;
};

// Per-element tolerance of the fused / unfused comparison: both compute the same fp32 arithmetic,
// the only freedom is the order of the keys in the softmax sums, a few fp32 ulps.
std::vector<double> tight(const std::vector<double>& want) {
  std::vector<double> t(want.size());
  for (size_t i = 0; i < want.size(); ++i) t[i] = 4e-7 * (std::fabs(want[i]) + 1.0);
  return t;
}

// Equal element by element, NaN equal to NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// One case: step position `pos` in an S = 24 row cache, one window [0, 24) or `parts` == 2
// PARTIAL_WRITE windows [0, 12) and [12, 24), heads [1, 7) of 8 over 2 KV heads (GQA group 4; the
// tile crosses the group boundary). `k_via_rope_append`: the unfused k path is FUSED ROPE_APPEND,
// else ROPE then KV_APPEND.
void check_rope_attention_equals_unfused(const RopeAttnDtypes& dt, int32_t pos, int parts, bool k_via_rope_append) {
  const Shape s{8, 2, 64, 24};
  const int64_t row = s.n_kv * s.hd, chunk = s.seq / parts;
  INFO("q dtype " << dt.q << " cache dtype " << dt.cache << " k_new/v_new dtype " << dt.fresh << " pos " << pos
                  << " partitions " << parts << (k_via_rope_append ? " (ROPE_APPEND)" : " (ROPE + KV_APPEND)"));
  RefProgram p;
  const auto qv = random_values(s.n_heads * s.hd, 300 + pos, dt.q, -2, 2);
  const auto kcv = random_values(s.seq * row, 301 + pos, dt.cache, -2, 2);
  const auto vcv = random_values(s.seq * row, 302 + pos, dt.cache);
  const auto knv = random_values(row, 303 + pos, dt.fresh, -2, 2);
  const auto vnv = random_values(row, 304 + pos, dt.fresh);
  const int32_t q = p.add(dt.q, {s.n_heads * s.hd}, qv), inv = p.add(AMK_DTYPE_F32, {s.hd / 2}, rope_table(s.hd, 10000.0));
  const int32_t k_new = p.add(dt.fresh, {row}, knv), v_new = p.add(dt.fresh, {row}, vnv);
  // The unfused path's caches (row p is overwritten by its appends) ...
  const int32_t k_ref = p.add(dt.cache, {s.seq, row}, kcv), v_ref = p.add(dt.cache, {s.seq, row}, vcv);
  // ... and the fused path's, with row p NaN: one read of it spoils the heads it reaches (NaN, or
  // 0 where a NaN l fails the l > 0 test), so they no longer match the unfused output.
  const int32_t k_fused = p.add(dt.cache, {s.seq, row}, kcv), v_fused = p.add(dt.cache, {s.seq, row}, vcv);
  for (int64_t i = 0; i < row; ++i) {
    p.set(k_fused, pos * row + i, NAN);
    p.set(v_fused, pos * row + i, NAN);
  }
  const auto k_fused_before = p.values(k_fused), v_fused_before = p.values(v_fused);
  const int32_t q_rot = p.add(dt.q, {s.n_heads * s.hd}), k_rot = p.add(dt.cache, {row});
  p.set_step(pos);

  // Unfused: ROPE(q), k rotated into its cache row p, v appended at row p.
  auto rope_q = make_inst(AMK_OP_ROPE, {q, inv}, {q_rot});
  rope_q.params.head_dim = static_cast<int32_t>(s.hd);
  rope_q.params.flags = AMK_FLAG_STEP_POS;
  REQUIRE(p.run(rope_q) == AMK_DEVERR_NONE);
  if (k_via_rope_append) {
    auto rope_k = make_inst(AMK_OP_FUSED, {k_new, inv, k_ref}, {k_ref});
    rope_k.params = rope_q.params;
    rope_k.params.flags = AMK_FLAG_STEP_POS | kRopeAppendRecipe;
    REQUIRE(p.run(rope_k) == AMK_DEVERR_NONE);
  } else {
    auto rope_k = make_inst(AMK_OP_ROPE, {k_new, inv}, {k_rot});
    rope_k.params = rope_q.params;
    REQUIRE(p.run(rope_k) == AMK_DEVERR_NONE);
    auto append_k = make_inst(AMK_OP_KV_APPEND, {k_rot, k_ref}, {k_ref});
    append_k.params.flags = AMK_FLAG_STEP_POS;
    REQUIRE(p.run(append_k) == AMK_DEVERR_NONE);
  }
  auto append_v = make_inst(AMK_OP_KV_APPEND, {v_new, v_ref}, {v_ref});
  append_v.params.flags = AMK_FLAG_STEP_POS;
  REQUIRE(p.run(append_v) == AMK_DEVERR_NONE);

  const int32_t partial = parts > 1 ? AMK_FLAG_PARTIAL_WRITE : 0;
  const int64_t width = parts > 1 ? s.hd + 2 : s.hd;
  for (int part = 0; part < parts; ++part) {
    INFO("partition [" << chunk * part << ", " << chunk * (part + 1) << ")");
    const int32_t want_out = p.add(AMK_DTYPE_F32, {s.n_heads * width}), got_out = p.add(AMK_DTYPE_F32, {s.n_heads * width});
    p.poison(want_out);
    p.poison(got_out);
    auto attn = attention_inst(q_rot, k_ref, v_ref, want_out, s, chunk * part, chunk, AMK_FLAG_STEP_KV | partial);
    attn.params.n_off = 1;
    attn.params.N_tile = 6;
    REQUIRE(p.run(attn) == AMK_DEVERR_NONE);
    auto fused = rope_attention_inst({q, k_fused, v_fused, k_new, v_new, inv}, got_out, s, chunk * part, chunk, partial);
    fused.params.n_off = 1;
    fused.params.N_tile = 6;
    REQUIRE(p.run(fused) == AMK_DEVERR_NONE);
    // Whole buffers: heads 0 and 7 keep the poison bytes on both sides; an empty window gives
    // m = -inf on both (count_mismatches accepts equal infinities).
    const auto want = p.values(want_out), got = p.values(got_out);
    for (double g : got) REQUIRE_FALSE(std::isnan(g));
    CHECK(count_mismatches("rope_attention", got, want, tight(want)) == 0);
  }
  // ROPE_ATTENTION writes its output only: the fused caches still hold the NaN row.
  CHECK(same_values(p.values(k_fused), k_fused_before));
  CHECK(same_values(p.values(v_fused), v_fused_before));
  CHECK(p.guards_intact());
}

}  // namespace

TEST_CASE("FUSED ROPE_ATTENTION equals ROPE, ROPE_APPEND, KV_APPEND, ATTENTION_TILE at a mid-cache step",
          "[instructions][op:fused][op:attention_tile]") {
  // p = 13 of 24 rows: the single window holds rows 0..12 and the fresh key.
  for (const RopeAttnDtypes& dt : {RopeAttnDtypes{AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16},
                                   RopeAttnDtypes{AMK_DTYPE_F32, AMK_DTYPE_F32, AMK_DTYPE_F32},
                                   RopeAttnDtypes{AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_F32}})
    for (bool via_rope_append : {true, false}) check_rope_attention_equals_unfused(dt, 13, 1, via_rope_append);
}

TEST_CASE("FUSED ROPE_ATTENTION PARTIAL_WRITE partitions equal the unfused partials", "[instructions][op:fused][op:attention_tile]") {
  // Two partitions of 12 rows: p = 13 lies in the second (rows 12 and the fresh key) while the
  // first is whole; p = 5 lies in the first, which leaves the second empty (m = -inf, l = 0).
  for (const RopeAttnDtypes& dt : {RopeAttnDtypes{AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16},
                                   RopeAttnDtypes{AMK_DTYPE_F32, AMK_DTYPE_F32, AMK_DTYPE_F32}})
    for (int32_t pos : {13, 5}) check_rope_attention_equals_unfused(dt, pos, 2, true);
}

TEST_CASE("FUSED ROPE_ATTENTION at step 0 attends to the fresh key alone", "[instructions][op:fused][op:attention_tile]") {
  for (const RopeAttnDtypes& dt : {RopeAttnDtypes{AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16},
                                   RopeAttnDtypes{AMK_DTYPE_F32, AMK_DTYPE_F32, AMK_DTYPE_F32}}) {
    check_rope_attention_equals_unfused(dt, 0, 1, true);
    check_rope_attention_equals_unfused(dt, 0, 2, false);
  }
  // One key: softmax weight 1, so every q head of KV group g outputs v_new's head g rounded to
  // the bf16 cache (round_sig(v, 8): bf16's round to nearest even), whatever q and k_new are.
  const Shape s{4, 2, 8, 3};
  RefProgram p;
  const std::vector<double> vn = {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f,
                                  1, 2, 3, 4, 5, 6, 7, 1.0 + std::ldexp(1, -8)};  // the last is a tie: rounds to 1
  const int32_t q = p.add(AMK_DTYPE_F32, {32}, random_values(32, 320, AMK_DTYPE_F32));
  const int32_t kc = p.add(AMK_DTYPE_BF16, {3, 16}), vc = p.add(AMK_DTYPE_BF16, {3, 16});
  for (int64_t i = 0; i < 48; ++i) {  // nothing of the caches may be read at step 0
    p.set(kc, i, NAN);
    p.set(vc, i, NAN);
  }
  const int32_t kn = p.add(AMK_DTYPE_F32, {16}, random_values(16, 321, AMK_DTYPE_F32));
  const int32_t vnew = p.add(AMK_DTYPE_F32, {16}, vn), inv = p.add(AMK_DTYPE_F32, {4}, rope_table(8, 10000.0));
  const int32_t out = p.add(AMK_DTYPE_F32, {32});
  p.set_step(0);
  REQUIRE(p.run(rope_attention_inst({q, kc, vc, kn, vnew, inv}, out, s, 0, 3, 0)) == AMK_DEVERR_NONE);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t d = 0; d < 8; ++d) {
      INFO("head " << h << " dim " << d);
      CHECK(p.get(out, h * 8 + d) == round_sig(vn[static_cast<size_t>((h / 2) * 8 + d)], 8));
    }
  CHECK(p.get(out, 31) == 1.0);
  CHECK(p.guards_intact());
}

TEST_CASE("FUSED ROPE_ATTENTION blobs: the Tensor::load prologue is the host's measuring choice, and only there",
          "[instructions][op:fused][op:attention_tile]") {
  using namespace amk::instructions;
  const Shape s{8, 2, 64, 24};
  const int64_t row = s.n_kv * s.hd;
  RefProgram p;
  const int32_t q = p.add(AMK_DTYPE_BF16, {s.n_heads * s.hd}), inv = p.add(AMK_DTYPE_F32, {s.hd / 2});
  const int32_t kc = p.add(AMK_DTYPE_BF16, {s.seq, row}), vc = p.add(AMK_DTYPE_BF16, {s.seq, row});
  const int32_t kn = p.add(AMK_DTYPE_BF16, {row}), vn = p.add(AMK_DTYPE_BF16, {row});
  const int32_t out = p.add(AMK_DTYPE_BF16, {s.n_heads * s.hd});
  p.set_step(13);
  std::vector<unsigned char> blob(static_cast<size_t>(kTaskBlobBytes));
  const auto args_of = [&] {
    AttentionTileArgs a;
    std::memcpy(&a, blob.data() + sizeof(TaskBlobHeader), sizeof a);
    return a;
  };

  // A decode leaves the raw-operand prologue on; the knob flips that flag and nothing else.
  REQUIRE(predecode_task(p.view(), rope_attention_inst({q, kc, vc, kn, vn, inv}, out, s, 0, s.seq, 0), blob.data()) ==
          AMK_DEVERR_NONE);
  CHECK_FALSE(args_of().generic_prologue);
  const std::vector<unsigned char> decoded = blob;
  CHECK(set_generic_rope_prologue(blob.data()));
  CHECK(args_of().generic_prologue);
  AttentionTileArgs a = args_of();
  a.generic_prologue = false;
  std::memcpy(blob.data() + sizeof(TaskBlobHeader), &a, sizeof a);
  CHECK(blob == decoded);

  // ATTENTION_TILE has no prologue: its blob stays as decoded.
  REQUIRE(predecode_task(p.view(), attention_inst(q, kc, vc, out, s, 0, s.seq, AMK_FLAG_STEP_KV), blob.data()) ==
          AMK_DEVERR_NONE);
  const std::vector<unsigned char> plain = blob;
  CHECK_FALSE(set_generic_rope_prologue(blob.data()));
  CHECK(blob == plain);
}

TEST_CASE("ATTENTION_TILE blobs carry the device path's layout checks, decoded once on the host",
          "[instructions][op:attention_tile][op:fused]") {
  // The device takes its tensor-core path on AttentionTileArgs::mma_layout (attention_tile_run), so
  // this byte must say what the pointers, strides and dtypes do for both opcodes that decode into
  // AttentionTileArgs, and move with every condition: an operand that breaks one clears it.
  using namespace amk::instructions;
  struct Case {
    const char* what;
    int32_t q_dt, k_dt, v_dt;
    int64_t hd;
    int misalign;      // bytes added to this input's pointer: 1 = k, 2 = v, 3 = q
    int strided;       // 1: K's rows one element further apart than contiguous; 2: q's elements 2 apart
    bool want_mma;
  };
  const Case cases[] = {
      {"bf16 hd 64", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 0, 0, true},
      {"bf16 hd 128", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 128, 0, 0, true},
      {"f16 hd 64", AMK_DTYPE_F16, AMK_DTYPE_F16, AMK_DTYPE_F16, 64, 0, 0, true},
      {"bf16 hd 32", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 32, 0, 0, false},
      {"f32 caches hd 64", AMK_DTYPE_F32, AMK_DTYPE_F32, AMK_DTYPE_F32, 64, 0, 0, false},
      {"f32 q, bf16 caches", AMK_DTYPE_F32, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 0, 0, false},
      {"K and V of two dtypes", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_F16, 64, 0, 0, false},
      {"bf16 hd 256", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 256, 0, 0, false},
      {"K 8 bytes off 16", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 1, 0, false},
      {"V 8 bytes off 16", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 2, 0, false},
      {"q 8 bytes off 16", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 3, 0, false},
      {"strided K", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 0, 1, false},
      {"strided q", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 0, 2, true},
      {"strided q 8 bytes off 16", AMK_DTYPE_BF16, AMK_DTYPE_BF16, AMK_DTYPE_BF16, 64, 3, 2, true},
  };
  for (const Case& c : cases) {
    for (const bool fused : {false, true}) {
      INFO(c.what << (fused ? ", FUSED ROPE_ATTENTION" : ", ATTENTION_TILE"));
      const Shape s{4, 2, c.hd, 16};
      const int64_t row = s.n_kv * s.hd;
      RefProgram p;
      const int32_t q = c.strided == 2 ? p.add_strided(c.q_dt, {s.n_heads * s.hd}, {2}) : p.add(c.q_dt, {s.n_heads * s.hd});
      const int32_t k = c.strided == 1 ? p.add_strided(c.k_dt, {s.seq, row}, {row + 1, 1}) : p.add(c.k_dt, {s.seq, row});
      const int32_t v = p.add(c.v_dt, {s.seq, row});
      const int32_t kn = p.add(c.k_dt, {row}), vn = p.add(c.v_dt, {row}), inv = p.add(AMK_DTYPE_F32, {s.hd / 2});
      const int32_t out = p.add(AMK_DTYPE_F32, {s.n_heads * s.hd});
      p.set_step(5);
      amk_program_t prog = p.view();
      std::vector<amk_buffer_t> descs(prog.buffers, prog.buffers + prog.n_buffers);
      for (const amk_buffer_t& d : descs) REQUIRE((reinterpret_cast<uintptr_t>(d.ptr) & 15u) == 0);  // malloc's
      const int32_t shifted = c.misalign == 1 ? k : c.misalign == 2 ? v : c.misalign == 3 ? q : -1;
      if (shifted >= 0) descs[static_cast<size_t>(shifted)].ptr = static_cast<char*>(descs[static_cast<size_t>(shifted)].ptr) + 8;
      prog.buffers = descs.data();
      const amk_instruction_t inst = fused ? rope_attention_inst({q, k, v, kn, vn, inv}, out, s, 0, s.seq, 0)
                                           : attention_inst(q, k, v, out, s, 0, s.seq, AMK_FLAG_STEP_KV);
      std::vector<unsigned char> blob(static_cast<size_t>(kTaskBlobBytes));
      REQUIRE(predecode_task(prog, inst, blob.data()) == AMK_DEVERR_NONE);
      AttentionTileArgs a;
      std::memcpy(&a, blob.data() + sizeof(TaskBlobHeader), sizeof a);
      CHECK(a.mma_layout == c.want_mma);
      // The device's own decode (no blob) runs the same function.
      AttentionTileArgs d;
      REQUIRE(decode_attention_tile(prog, inst, &d) == AMK_DEVERR_NONE);
      CHECK(d.mma_layout == a.mma_layout);
    }
  }
}

TEST_CASE("FUSED ROPE_ATTENTION refuses non-step flags, pos != 0, wrong arity and operands, p outside the cache",
          "[instructions][op:fused][op:attention_tile]") {
  const Shape s{4, 2, 8, 6};
  RefProgram p;
  const int32_t q = p.add(AMK_DTYPE_F32, {32}, random_values(32, 330, AMK_DTYPE_F32));
  const int32_t kc = p.add(AMK_DTYPE_F32, {6, 16}, random_values(96, 331, AMK_DTYPE_F32));
  const int32_t vc = p.add(AMK_DTYPE_F32, {6, 16}, random_values(96, 332, AMK_DTYPE_F32));
  const int32_t kn = p.add(AMK_DTYPE_F32, {16}, random_values(16, 333, AMK_DTYPE_F32));
  const int32_t vn = p.add(AMK_DTYPE_F32, {16}, random_values(16, 334, AMK_DTYPE_F32));
  const int32_t inv = p.add(AMK_DTYPE_F32, {4}, rope_table(8, 10000.0));
  const int32_t short_row = p.add(AMK_DTYPE_F32, {8}), inv5 = p.add(AMK_DTYPE_F32, {5});
  const int32_t out = p.add(AMK_DTYPE_F32, {32});
  const std::vector<int32_t> ins = {q, kc, vc, kn, vn, inv};
  const auto good = rope_attention_inst(ins, out, s, 0, 6, 0);
  p.set_step(3);
  REQUIRE(p.run(good) == AMK_DEVERR_NONE);
  p.poison(out);
  auto expect_refused = [&](const amk_instruction_t& inst, int32_t code) {
    CHECK(p.run(inst) == code);
    CHECK(p.poisoned(out));  // refused before anything is written
  };

  SECTION("the decode-step flags and pos 0 are required") {
    auto inst = good;
    inst.params.flags = kRopeAttentionFlags & ~AMK_FLAG_STEP_POS;
    expect_refused(inst, AMK_DEVERR_BAD_PARAMS);
    inst.params.flags = kRopeAttentionFlags & ~AMK_FLAG_STEP_KV;
    expect_refused(inst, AMK_DEVERR_BAD_PARAMS);
    inst.params.flags = kRopeAttentionFlags;
    inst.params.pos = 1;  // would attend at step.pos + 1, past the STEP_KV window
    expect_refused(inst, AMK_DEVERR_BAD_PARAMS);
    inst.params.pos = -1;
    expect_refused(inst, AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("exactly 6 inputs") {
    // The slots past n_inputs hold valid buffers, so only the input count (the arity check, or
    // binding input 5 of 5) can refuse these.
    auto five = good;
    five.n_inputs = 5;
    expect_refused(five, AMK_DEVERR_BAD_PARAMS);
    auto seven = make_inst(AMK_OP_FUSED, {q, kc, vc, kn, vn, inv, inv}, {out});
    seven.params = good.params;
    expect_refused(seven, AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("k_new / v_new are one cache row, inv_freq head_dim / 2 entries") {
    expect_refused(rope_attention_inst({q, kc, vc, short_row, vn, inv}, out, s, 0, 6, 0), AMK_DEVERR_BAD_PARAMS);
    expect_refused(rope_attention_inst({q, kc, vc, kn, short_row, inv}, out, s, 0, 6, 0), AMK_DEVERR_BAD_PARAMS);
    expect_refused(rope_attention_inst({q, kc, vc, kn, vn, inv5}, out, s, 0, 6, 0), AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("an odd head_dim has no rotate-half") {
    const Shape odd{2, 1, 3, 4};
    const int32_t q3 = p.add(AMK_DTYPE_F32, {6}), k3 = p.add(AMK_DTYPE_F32, {4, 3}), v3 = p.add(AMK_DTYPE_F32, {4, 3});
    const int32_t kn3 = p.add(AMK_DTYPE_F32, {3}), vn3 = p.add(AMK_DTYPE_F32, {3}), inv1 = p.add(AMK_DTYPE_F32, {1});
    const int32_t out3 = p.add(AMK_DTYPE_F32, {6});
    CHECK(p.run(rope_attention_inst({q3, k3, v3, kn3, vn3, inv1}, out3, odd, 0, 4, 0)) == AMK_DEVERR_BAD_PARAMS);
  }
  SECTION("step pos must be a row of the cache, even when the window fits") {
    p.set_step(5);  // the last row: fine
    REQUIRE(p.run(good) == AMK_DEVERR_NONE);
    p.poison(out);
    p.set_step(6);  // window [0, 6) still inside the 6 rows, but p = 6 is not a row
    expect_refused(good, AMK_DEVERR_INDEX_OUT_OF_RANGE);
    p.set_step(100);
    expect_refused(good, AMK_DEVERR_INDEX_OUT_OF_RANGE);
  }
  CHECK(p.guards_intact());
}
