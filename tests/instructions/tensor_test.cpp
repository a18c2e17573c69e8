// tests/instructions/tensor_test.cpp: Tensor, the flat view every micro-kernel reads through
// (instructions/common/tensor.h): the strided offset walk, which no lowered program exercises
// (their buffers are contiguous) but hand-built amk_program_t descriptors may.
#include <catch2/catch.hpp>

#include <cstdint>

#include "instructions/common/tensor.h"

TEST_CASE("Tensor::offset walks every dimension of a strided view", "[instructions]") {
  using amk::instructions::Tensor;
  using amk::instructions::tensor_bind;
  // Never dereferenced: tensor_bind only checks that a view holding elements has a pointer.
  static float sentinel = 0.0f;
  amk_program_t prog{};
  prog.n_buffers = 1;
  Tensor t;
  // The transpose of a [65536, 65536] matrix: offsets past 2^32, reached from flat indices past 2^31.
  amk_buffer_t tr{&sentinel, int64_t{65536} * 65536, 2, AMK_DTYPE_F32, 0, 0, {65536, 65536}, {1, 65536}};
  prog.buffers = &tr;
  REQUIRE(tensor_bind(prog, 0, &t) == AMK_DEVERR_NONE);
  CHECK_FALSE(t.contiguous);
  CHECK(t.offset(t.numel - 1) == 65535 + int64_t{65535} * 65536);
  CHECK(t.offset(int64_t{40000} * 65536 + 3) == 40000 + int64_t{3} * 65536);
  // A rank-4 view with padding in every dimension: offset() against the walk written out.
  amk_buffer_t p4{&sentinel, 3 * 5 * 7 * 11, 4, AMK_DTYPE_F32, 0, 0, {3, 5, 7, 11}, {5000, 900, 13, 1}};
  prog.buffers = &p4;
  REQUIRE(tensor_bind(prog, 0, &t) == AMK_DEVERR_NONE);
  int wrong = 0;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t e = 0; e < 7; ++e)
        for (int64_t f = 0; f < 11; ++f) {
          const int64_t flat = ((a * 5 + c) * 7 + e) * 11 + f;
          wrong += t.offset(flat) != a * 5000 + c * 900 + e * 13 + f;
        }
  CHECK(wrong == 0);
}
