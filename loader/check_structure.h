// loader/check_structure.h: the structural facts the loader's own indexing relies on (internal).
// validate() proves far more; these run even under the test hook so that loading a program never
// indexes out of range, whatever the program says.
#pragma once
#include "ir/program.h"
#include "ir/status.h"

namespace amk::loader {

/// Ids dense (0..n-1, any order) for buffers, counters, tasks and pages; every reference in range;
/// ABI caps; rank <= 4; shapes non-negative with a representable byte size; thresholds that fit a
/// uint32; sm >= 0. InvalidArgument naming the entity otherwise.
Status check_structure(const ir::Program& program);

}  // namespace amk::loader
