// loader/dtype_cast.h: write and read one element of any IR dtype as a float (host side only).
// Used for random weights and synthesized constants. Narrow floats round to nearest even (F8E4M3
// saturates at +-448, it has no infinity); integer types round to nearest and saturate; I4 packs
// two per byte, low nibble first, signed; BOOL stores v != 0.
#pragma once
#include <cstdint>

#include "ir/enums.h"

namespace amk::loader {

/// Store `v` as element `index` of a `dtype` array at `base`.
void dtype_store(ir::DType dtype, void* base, int64_t index, float v);
/// Store src[0..n) as elements [offset, offset + n) of a `dtype` array at `base`; the same values
/// as dtype_store(), with fast paths for F32, BF16 and F16 (I4: `offset` and `n` must be even
/// for concurrent callers to touch disjoint bytes).
void dtype_store_array(ir::DType dtype, void* base, int64_t offset, const float* src, int64_t n);
/// Element `index` of a `dtype` array at `base`, as a float.
float dtype_load(ir::DType dtype, const void* base, int64_t index);

}  // namespace amk::loader
