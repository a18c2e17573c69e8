// tools/bench/destack_weights.h: device copies of the parts of a stacked bf16 weight (docs/JSON.md
// "stack"), for the cuBLAS baseline, whose kernels read each tensor as its own contiguous matrix:
// a program with the MLP fold holds gate, up and down_proj only inside its [I, 3, H] buffers; and
// copies of row-permuted weights ("rope_pairs") in the model's order.
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

  /// A new device copy of the bf16 device buffer `permuted` [n, k] whose rows are in rope-pair
  /// order per head of `head_dim` rows (docs/JSON.md "rope_pairs"), in the model's row order
  /// again: the rope-in-qkv program's W_q / W_k. InvalidArgument for a bad shape.
  [[nodiscard]] Status unpermuted(const void* permuted, int64_t n, int64_t k, int64_t head_dim, const void** out);

 private:
  std::vector<void*> allocs_;
};

}  // namespace amk::bench
