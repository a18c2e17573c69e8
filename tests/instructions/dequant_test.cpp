// tests/instructions/dequant_test.cpp: DEQUANT of I8 and packed I4 codes with group scales and
// optional zero points, against (q - zero) * scale computed here.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/instructions/ref_harness.h"

using namespace amk::test;

namespace {

std::vector<double> int_codes(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("DEQUANT: hand-computed I4 nibbles, low nibble first", "[instructions][op:dequant]") {
  RefProgram p;  // q = [[-8, 7, 1, -1]], one group of 4 with scale 0.5 and zero -1
  const int32_t q = p.add(AMK_DTYPE_I4, {1, 4}, {-8, 7, 1, -1});
  const int32_t s = p.add(AMK_DTYPE_F32, {1, 1}, {0.5}), z = p.add(AMK_DTYPE_F32, {1, 1}, {-1});
  const int32_t y = p.add(AMK_DTYPE_F32, {1, 4});
  auto inst = make_inst(AMK_OP_DEQUANT, {q, s, z}, {y});
  inst.params.qdtype = AMK_DTYPE_I4;
  inst.params.group = 4;
  REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
  CHECK(p.values(y) == std::vector<double>{-3.5, 4, 1, 0});
}

TEST_CASE("DEQUANT: I8 and I4 with group scales and zeros", "[instructions][op:dequant]") {
  for (int32_t qdt : {AMK_DTYPE_I8, AMK_DTYPE_I4}) {
    for (int64_t K : {7, 32, 33}) {
      for (int64_t group : {2, 4, 32}) {
        for (bool zeros : {false, true}) {
          const int64_t N = 3, G = (K + group - 1) / group;
          RefProgram p;
          const auto qv = qdt == AMK_DTYPE_I8 ? int_codes(N * K, 140, -128, 127) : int_codes(N * K, 141, -8, 7);
          const auto sv = random_values(N * G, 142, AMK_DTYPE_BF16, 0.01, 0.1);
          const auto zv = int_codes(N * G, 143, -3, 3);
          const int32_t q = p.add(qdt, {N, K}, qv), s = p.add(AMK_DTYPE_BF16, {N, G}, sv);
          const int32_t z = p.add(AMK_DTYPE_I8, {N, G}, zv), y = p.add(AMK_DTYPE_BF16, {N, K});
          auto inst = zeros ? make_inst(AMK_OP_DEQUANT, {q, s, z}, {y}) : make_inst(AMK_OP_DEQUANT, {q, s}, {y});
          inst.params.qdtype = qdt;
          inst.params.group = static_cast<int32_t>(group);
          REQUIRE(p.run(inst) == AMK_DEVERR_NONE);
          std::vector<double> want(N * K);
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k) {
              const int64_t g = n * G + k / group;
              want[n * K + k] = (qv[n * K + k] - (zeros ? zv[g] : 0.0)) * sv[g];
            }
          INFO("qdtype " << qdt << " K " << K << " group " << group << " zeros " << zeros);
          check_output(p, y, AMK_DTYPE_BF16, want);
        }
      }
    }
  }
}

TEST_CASE("DEQUANT: qdtype must name q's dtype; scales must be [N, ceil(K / group)]", "[instructions][op:dequant]") {
  RefProgram p;
  const int32_t q = p.add(AMK_DTYPE_I8, {2, 8}), s = p.add(AMK_DTYPE_F32, {2, 2}), y = p.add(AMK_DTYPE_F32, {2, 8});
  p.poison(y);
  auto inst = make_inst(AMK_OP_DEQUANT, {q, s}, {y});
  inst.params.qdtype = AMK_DTYPE_I4;
  inst.params.group = 4;
  CHECK(p.run(inst) == AMK_DEVERR_BAD_DTYPE);
  inst.params.qdtype = AMK_DTYPE_I8;
  inst.params.group = 2;  // would need [2, 4] scales
  CHECK(p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  inst.params.group = 0;
  CHECK(p.run(inst) == AMK_DEVERR_BAD_PARAMS);
  CHECK(p.poisoned(y));
}
