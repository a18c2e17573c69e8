// vm/cuda/ring_index.h: the place of item n (a task, a weight chunk) in a ring of `size` slots,
// n % size and n / size, kept by stepping instead of dividing. The persistent kernel's hot loops
// walk their rings one item at a time with a size known only at launch: there each % or / is a
// ~25-instruction subroutine around a MUFU.RCP. The loader's round did three of them (a round took
// ~0.6 us on the H200) and the compute warps two per chunk for the ring alone; stepping took the
// chunk from 1.70 to 1.47 us and the token 2.5-4% (docs/PERFORMANCE.md row 143).
#pragma once
#include <cstdint>

#include "instructions/common/hd.h"

namespace amk::vm::gpuvm {

struct RingIndex {
  int32_t slot = 0;  ///< n % size
  uint32_t lap = 0;  ///< n / size

  /// Item n's place: one division, where a walk starts.
  AMK_HD static RingIndex of(int32_t n, int32_t size) {
    return RingIndex{n % size, static_cast<uint32_t>(n / size)};
  }
  /// Item n + 1's place.
  AMK_HD void step(int32_t size) {
    if (++slot == size) {
      slot = 0;
      ++lap;
    }
  }
  /// Item n - 1's place (n > 0).
  AMK_HD RingIndex before(int32_t size) const {
    return slot > 0 ? RingIndex{slot - 1, lap} : RingIndex{size - 1, lap - 1u};
  }
};

}  // namespace amk::vm::gpuvm
