// schedule/pages.h: the `page_allocation` knob: binding ACTIVATION buffers to scratch pages (internal).
// Liveness is measured on the stage chain: an activation is live from the first stage that writes
// it to the last stage that reads or writes it. Two activations share a page only when one's last
// stage is strictly before the other's first, so every reader of the old value is ordered before
// the new value's first writer (the validator's page.clobber rule holds by construction).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::schedule {

/// Fill program.pages: "none" leaves it null; "linear" gives each activation its own page;
/// "graph_color" colors the live intervals greedily (in order of first stage, each buffer takes the
/// free page whose size fits best), page nbytes = its largest buffer. Page live_start/live_end are
/// stage indices (= counter ids). `task_stage` maps a task id to its stage.
[[nodiscard]] Status allocate_pages(ir::Program& program, const std::string& mode,
                                    const std::vector<int32_t>& task_stage);

/// Scratch memory the program needs for activations: the pages' total when paged, else the sum of
/// ACTIVATION buffer bytes.
int64_t program_scratch_bytes(const ir::Program& program);

}  // namespace amk::schedule
