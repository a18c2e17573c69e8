// tools/bench/timing_emulation.h: program rewrites that answer "how fast would the token be
// without X" before X's replacement is built. Measurement only: an emulated program computes wrong
// results (amk-bench decode refuses a baseline check on one), so these are the ceilings a design
// can reach, never a speed anyone may report as amk's (docs/PERFORMANCE.md rows 97, 159, 173).
#pragma once
#include <string>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::bench {

/// The attention stage taken out of a lowered decode program: every ATTENTION_TILE, FUSED
/// ROPE_ATTENTION and ATTENTION_COMBINE task is removed, and each wait on one of their counters is
/// replaced by the removed producers' own waits (so o_proj starts where the attention tasks would
/// have: when q / k / v are done), keeping what the counter's other producers add (the KV appends
/// share the combines' counter). What only the removed tasks wrote becomes a CONST of random bytes,
/// so o_proj reads garbage. This is the ceiling of any design that hides the attention stage and
/// its hop (e.g. attention recomputed inside each o_proj task). `*removed` gets the number of tasks
/// removed. InvalidArgument when the program has no attention task.
[[nodiscard]] Status emulate_without_attention(ir::Program& program, int* removed);

/// The emulation named by the environment variable AMK_EMU_NO_ATTENTION=1 (the only one so far),
/// applied to `program`; `*what` gets its description ("" when none is set).
[[nodiscard]] Status apply_env_timing_emulation(ir::Program& program, std::string* what);

}  // namespace amk::bench
