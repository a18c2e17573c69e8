// loader/rope_pairs.h: WEIGHT/CONST buffers whose rows are permuted into rope-pair order at load
// (docs/JSON.md "rope_pairs"; internal to amk_loader). With rope_pairs = hd, stored row b*hd + 2i
// is source row b*hd + i and stored row b*hd + 2i + 1 is source row b*hd + i + hd/2, so a GEMV
// epilogue can rotate adjacent output rows. The image is always a copy: no row stays in place.
#pragma once
#include <cstdint>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::loader {

/// The source row that stored row `row` of a buffer with rope_pairs = `head_dim` holds.
int64_t rope_pairs_source_row(int64_t row, int64_t head_dim);

/// validate()'s source.rope_pairs facts that the permutation's indexing relies on, restated
/// because the loader also runs without validate(): WEIGHT/CONST, one file source, rank 2 with
/// whole heads of an even head_dim >= 2. InvalidArgument naming the buffer otherwise.
Status rope_pairs_check(const ir::Buffer& buffer);

/// Copy the [N, K] rows of `src` (buffer's dtype, as stored in the file) to `dst` in rope-pair
/// order. `buffer` must have passed rope_pairs_check(); `dst` holds buffer.nbytes(), zeroed.
void rope_pairs_permute(const ir::Buffer& buffer, const void* src, void* dst);

/// Seeded random values for `buffer` of `program` at `dst` (zeroed): the permutation of what
/// random_fill_tensor() gives its shape under random_key_of_source(program, source), which is the
/// buffer's own id when it is the program's only buffer of that source, so the program with and
/// without rope_pairs describes the same model. Checks rope_pairs_check() first.
Status rope_pairs_random(const ir::Program& program, const ir::Buffer& buffer, uint64_t seed, void* dst);

}  // namespace amk::loader
