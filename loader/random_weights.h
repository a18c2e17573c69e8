// loader/random_weights.h: seeded stand-in weights, so programs run without a weights file.
// The values depend only on (seed, key, dtype, shape) and are the same on every platform (own PRNG
// and Box-Muller, no std:: distributions, whose output is implementation-defined). A buffer with one
// `source` is keyed by its id (as it always was, so existing programs keep their values); a part of
// a stacked buffer, and a buffer with rope_pairs, by random_key_of_source(), so it holds what the
// unstacked, unpermuted buffer would.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/program.h"

namespace amk::loader {

/// What seeds a tensor's random streams. Ids and source names map to disjoint values.
struct RandomKey {
  uint64_t value = 0;
};

/// The key of a buffer filled as a whole: its id.
RandomKey random_key_of(const ir::Buffer& buffer);
/// The key of state-dict tensor `source` as a stack part or a permuted (rope_pairs) buffer of
/// `program`: the key of the program's first unstacked WEIGHT/CONST buffer with that source that
/// is not permuted, else of the first permuted one (so all hold the same numbers, up to their
/// layout), or, when there is none, one derived from the name alone.
RandomKey random_key_of_source(const ir::Program& program, std::string_view source);

/// Fill `dst` (buffer.nbytes() bytes, zeroed) for `buffer`, cast to its dtype, keyed by its id:
///   float dtypes, rank >= 2: normal(0, 1/sqrt(last_dim))  (a [N_out, K] matrix: 1/sqrt(K))
///   float dtypes, rank <= 1: 1 + 0.1 * normal             (norm weights)
///   I8: uniform in [-127, 127]; I4: [-8, 7]; U8: [0, 255]; I32: [0, 15]; BOOL: {0, 1}.
void random_fill(const ir::Buffer& buffer, uint64_t seed, void* dst);
/// The same for a tensor of `dtype` and `shape` (non-negative dims) keyed by `key`; `dst` holds
/// its bytes, zeroed. random_fill(b, ...) == random_fill_tensor(b.dtype, b.shape, random_key_of(b), ...).
void random_fill_tensor(ir::DType dtype, const std::vector<int64_t>& shape, RandomKey key, uint64_t seed, void* dst);

}  // namespace amk::loader
