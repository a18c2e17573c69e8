// ir/validate_checks.h: the passes validate() runs, in order (internal). Structural passes run on
// any program; the graph passes (deadlock, happens-before, races) need dense ids and resolved
// references, which `integrity_ok` records.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/opspec.h"
#include "ir/validate_diag.h"
#include "ir/validate_index.h"

namespace amk::ir::detail {

struct HbGraph;

/// Shared state of one validate() call.
struct Context {
  const Program& program;
  ProgramIndex ix;
  DiagSink sink;
  bool integrity_ok = true;               ///< ids dense and every id reference resolves
  std::vector<uint8_t> task_refs_ok;      ///< per task: its buffer references resolve
  ValidationStats stats;

  explicit Context(const Program& p) : program(p), ix(build_index(p)), sink(p) {}
};

// validate_structure.cpp
/// A FUSED task's recipe when it names a known one, else nullptr.
const RecipeSpec* task_recipe(const Task& task);
/// The exact output count of `task`: its FUSED recipe's (RecipeSpec::outputs), else its opcode's.
int task_outputs_expected(const Task& task);
void check_ids(Context& cx);          ///< ids.dense
void check_version(Context& cx);      ///< version
void check_buffers(Context& cx);      ///< caps (rank), shape (dims, numel)
void check_counters(Context& cx);     ///< counter.init
void check_tasks(Context& cx);        ///< ref.*, arity, caps, sm.range, wait.*, write.readonly
void check_pages(Context& cx);        ///< ref.page, ref.buffer, page.size, page.bind
void check_meta(Context& cx);         ///< target.label

// validate_sources.cpp
void check_sources(Context& cx);      ///< source.stack, source.rope_pairs

// validate_params.cpp
void check_params(Context& cx, int32_t t);   ///< params.required, params.type, params.unknown

// validate_shapes.cpp
void check_shapes(Context& cx, int32_t t);   ///< shape, tile.bounds, contract

// validate_deadlock.cpp: deadlock.cycle / queue.order witnesses for tasks that never fire.
void check_deadlock(Context& cx, const Firing& firing);

// validate_races.cpp: race.*, page.clobber, output.unproduced, onchip.sm.
void check_races(Context& cx, const Firing& firing, const HbGraph& hb);

}  // namespace amk::ir::detail
