// loader/bind_weights.h: give every WEIGHT and CONST buffer its data (internal to amk_loader).
#pragma once
#include "ir/program.h"
#include "ir/status.h"
#include "loader/image_storage.h"
#include "loader/loader.h"

namespace amk::loader {

/// For each WEIGHT/CONST buffer, in id order: a stacked buffer is built from its parts (from the
/// file, or random with a seed: stack_weights.h); an `amk:` source is synthesized; otherwise, with
/// options.random_weights_seed, random values; otherwise the tensor named by `source` in
/// options.weights_path (opened once into storage.weights): zero-copy into the mapping when the
/// dtypes match and the data is aligned to the element size, else copied into an aligned block.
/// A rope_pairs buffer is always a copy, its rows permuted (rope_pairs.h), file or random.
/// Shapes match when equal after dropping leading 1s ([1, N] binds [N]). Errors: NotFound (tensor
/// missing), InvalidArgument (dtype/shape mismatch, no source, no file), ParseError/IoError (file).
Status bind_weights(const ir::Program& program, const LoadOptions& options, ProgramImage::Storage& storage);

/// Shapes equal after dropping leading 1s from both.
bool shapes_match_squeezed(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace amk::loader
