// ir/dot.h: a program's task DAG as Graphviz DOT text (`amk-validate --dot/--svg`). Nodes are
// tasks colored by opcode and grouped into one cluster per SM (plus "unassigned"); edges are the
// counter dependencies (producer -> waiter, labelled with the counter id). Given a rejected
// program's diagnostics, the tasks and edges they name are drawn in red with the messages as
// tooltips, and a note lists the first errors. Works on broken programs too: dangling references
// are skipped, never followed. Tasks an error names together with no edge between them (a race)
// get a dashed red line.
#pragma once
#include <string>

#include "ir/program.h"
#include "ir/validate.h"

namespace amk::ir {

struct DotOptions {
  std::string title;          ///< graph label (e.g. the file name); empty = none
  size_t max_listed_errors = 12;  ///< errors spelled out in the diagnostics note
};

/// The DOT text. `verdict` may be null (no highlighting); otherwise its errors drive the red.
/// An edge is red when both its tasks are named by an error, or its counter is.
std::string program_to_dot(const Program& program, const ValidationResult* verdict, const DotOptions& options = {});

/// The fill color (an "#rrggbb" string) used for `op`; distinct for every opcode.
std::string dot_opcode_color(Opcode op);

}  // namespace amk::ir
