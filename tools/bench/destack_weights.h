// tools/bench/destack_weights.h: device copies of the parts of a stacked bf16 weight (docs/JSON.md
// "stack"), for the cuBLAS baseline, whose kernels read each tensor as its own contiguous matrix:
// a program with the MLP fold holds gate, up and down_proj only inside its [I, 3, H] buffers.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/status.h"

namespace amk::bench {

/// Owns the copies (freed with it).
class DestackedWeights {
 public:
  DestackedWeights() = default;
  ~DestackedWeights();
  DestackedWeights(const DestackedWeights&) = delete;
  DestackedWeights& operator=(const DestackedWeights&) = delete;

  /// A new device copy of part `p` of the bf16 device buffer `stacked` [n, parts, k]: [n, k], or
  /// [k, n] when `transpose` (the part was stored transposed, so this gives back the original
  /// tensor). InvalidArgument for a bad shape, GpuRuntime naming the failed call.
  [[nodiscard]] Status part(const void* stacked, int64_t n, int64_t parts, int64_t k, int64_t p, bool transpose,
                            const void** out);

 private:
  std::vector<void*> allocs_;
};

}  // namespace amk::bench
