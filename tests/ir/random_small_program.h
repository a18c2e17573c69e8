// tests/ir/random_small_program.h: a seeded generator of small random programs (2-6 tasks) that are
// structurally valid but often unsafe, for cross-checking validate() against dynamic judges
// (interleaving_oracle.h, ir::simulate_adversarial). About a fifth are safe; every rule of
// docs/VALIDATION.md that concerns ordering, pages, KV caches and outputs occurs.
#pragma once
#include <random>

#include "ir/program.h"

namespace amk::testing {

/// One random program from `rng` (deterministic for a given state of the engine). With
/// `accumulate`, a good part of the tasks are FUSED RMSNORM_MLP_FOLD tasks accumulating into an
/// activation or the output (often several into one buffer) and FUSED GEMV_ADD_COPY tiles; without
/// it the program and the engine's draws are exactly as they were before those recipes existed.
ir::Program random_small_program(std::mt19937_64& rng, bool accumulate = false);

}  // namespace amk::testing
