// loader/stack_weights.h: build a stacked WEIGHT/CONST buffer (docs/FOLD.md, "Stacked weight
// sources"; internal to amk_loader). The buffer is [N, P, K] and buf[n, p, :] is row n of part p,
// a rank-2 tensor transposed first when the part says so. The image is always a copy: the rows of
// the parts interleave, so no part can be bound zero-copy.
#pragma once
#include <cstdint>

#include "ir/program.h"
#include "ir/status.h"
#include "loader/safetensors.h"

namespace amk::loader {

/// Build stacked `buffer` at `dst` (buffer.nbytes() bytes, zeroed) from `file`. Every part must
/// exist, be rank 2 with a dtype the IR has, and be [N, K] after its transpose; its values are cast
/// to the buffer's dtype (a plain copy when the dtypes match). Errors name the buffer, the part,
/// its key and both shapes: NotFound (missing tensor), InvalidArgument (anything else).
Status stack_from_file(const ir::Buffer& buffer, const SafetensorsFile& file, void* dst);

/// Seeded random values for stacked `buffer` of `program` at `dst` (zeroed): part p holds what
/// random_fill() gives an unstacked buffer of its source, keyed by random_key_of_source(), so the
/// two agree number for number. InvalidArgument when the shape is not [N, P, K].
Status stack_random(const ir::Program& program, const ir::Buffer& buffer, uint64_t seed, void* dst);

}  // namespace amk::loader
