// The persistent kernel's dynamic shared memory layout (vm/cuda/dyn_smem_layout.h): the ring's
// offset from the aligned base depends on the work area and the skew alone, and the launch asks
// for enough bytes for any 16-byte-aligned base.
#include <catch2/catch.hpp>

#include "vm/cuda/dyn_smem_layout.h"

using amk::vm::gpuvm::dyn_smem_align_skip;
using amk::vm::gpuvm::dyn_smem_layout;
using amk::vm::gpuvm::kDynSmemAlign;
using amk::vm::gpuvm::kDynSmemSlack;
using amk::vm::gpuvm::kRingSkewDefault;
using amk::vm::gpuvm::kRingSkewMax;

TEST_CASE("dyn_smem_layout puts the ring skew bytes past the boundary after the work area", "[vm][smem]") {
  // Llama-1B's launch: 8192 floats of work area, two 64 KiB slots.
  const auto l = dyn_smem_layout(32768, kRingSkewDefault, 2, 65536);
  CHECK(l.ring_offset == 32768 + 16);
  CHECK(l.bytes == kDynSmemSlack + 32768 + 16 + 2 * 65536);
  // A work area that ends off a boundary: the ring goes to the next boundary, then the skew.
  const auto odd = dyn_smem_layout(32768 + 32, 48, 2, 65536);
  CHECK(odd.ring_offset == 32768 + kDynSmemAlign + 48);
  CHECK(odd.ring_offset % kDynSmemAlign == 48);
  CHECK(odd.ring_offset >= 32768 + 32);  // never over the work area
}

TEST_CASE("dyn_smem_layout's ring offset is the same mod 1024 for every work area", "[vm][smem]") {
  for (int64_t work = 0; work <= 4 * kDynSmemAlign; work += 32) {
    for (int64_t skew : {int64_t{0}, int64_t{16}, int64_t{48}, kRingSkewMax}) {
      const auto l = dyn_smem_layout(work, skew, 3, 4096);
      INFO("work " << work << " skew " << skew);
      CHECK(l.ring_offset % kDynSmemAlign == skew);
      CHECK(l.ring_offset >= work);
      CHECK(l.ring_offset - work < kDynSmemAlign + skew);
      // The rounding of a 16-byte-aligned base skips at most the slack: the ring's end fits.
      CHECK(l.bytes - kDynSmemSlack == l.ring_offset + 3 * 4096);
    }
  }
}

TEST_CASE("dyn_smem_layout clamps the skew to a multiple of 16 in [0, 1008]", "[vm][smem]") {
  CHECK(dyn_smem_layout(0, -5, 2, 1024).ring_offset == 0);
  CHECK(dyn_smem_layout(0, 17, 2, 1024).ring_offset == 16);
  CHECK(dyn_smem_layout(0, 5000, 2, 1024).ring_offset == kRingSkewMax);
  CHECK(kRingSkewMax % 16 == 0);
  CHECK(kRingSkewMax < kDynSmemAlign);
}

TEST_CASE("dyn_smem_layout without a ring asks for the work area and the slack", "[vm][smem]") {
  const auto l = dyn_smem_layout(16384, kRingSkewDefault, 0, 65536);
  CHECK(l.ring_offset == 0);
  CHECK(l.bytes == kDynSmemSlack + 16384);
  CHECK(dyn_smem_layout(-8, 0, 0, 0).bytes == kDynSmemSlack);
}

TEST_CASE("dyn_smem_align_skip reaches the next 1024-byte boundary within the slack", "[vm][smem]") {
  CHECK(dyn_smem_align_skip(0) == 0);
  CHECK(dyn_smem_align_skip(2048) == 0);
  CHECK(dyn_smem_align_skip(14992) == 368);  // session 14's static shared memory: the base it followed
  for (uint32_t at = 0; at < 4 * kDynSmemAlign; at += 16) {
    const uint32_t skip = dyn_smem_align_skip(at);
    INFO("at " << at);
    CHECK((at + skip) % kDynSmemAlign == 0);
    CHECK(static_cast<int64_t>(skip) <= kDynSmemSlack);
  }
}
