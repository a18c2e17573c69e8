// loader/random_weights.h: seeded stand-in weights, so programs run without a weights file.
// The values depend only on (seed, buffer id) and are the same on every platform (own PRNG and
// Box-Muller, no std:: distributions, whose output is implementation-defined).
#pragma once
#include <cstdint>

#include "ir/program.h"

namespace amk::loader {

/// Fill `dst` (buffer.nbytes() bytes, zeroed) for `buffer`, cast to its dtype:
///   float dtypes, rank >= 2: normal(0, 1/sqrt(last_dim))  (a [N_out, K] matrix: 1/sqrt(K))
///   float dtypes, rank <= 1: 1 + 0.1 * normal             (norm weights)
///   I8: uniform in [-127, 127]; I4: [-8, 7]; U8: [0, 255]; I32: [0, 15]; BOOL: {0, 1}.
void random_fill(const ir::Buffer& buffer, uint64_t seed, void* dst);

}  // namespace amk::loader
