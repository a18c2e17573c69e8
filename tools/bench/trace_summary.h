// tools/bench/trace_summary.h: what one traced launch says about where the time went, in a few
// lines: the launch span, how busy the workers were, run and wait time per opcode, and the
// slowest dependency stages (tasks grouped by the counter they signal). `amk-bench decode
// --profile` prints it; it is the first thing to read before optimising (docs/PERFORMANCE.md).
#pragma once
#include <string>

#include "ir/program.h"
#include "vm/trace.h"

namespace amk::bench {

/// A human-readable summary of `trace` (records of tasks that never ran are skipped).
std::string summarize_trace(const ir::Program& program, const vm::LaunchTrace& trace, int slowest_stages = 8);

}  // namespace amk::bench
