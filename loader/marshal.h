// loader/marshal.h: ir entities -> the POD records of vm/abi.h (internal to amk_loader).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/program.h"
#include "ir/status.h"
#include "vm/abi.h"

namespace amk::loader {

/// The descriptor of `b` at `ptr`: rank, shape and contiguous element strides (entries at and past
/// rank are 0), numel, dtype and space codes.
amk_buffer_t marshal_buffer(const ir::Buffer& b, void* ptr);

/// The instruction for `t` (sm is left 0; queues fill it with the worker). Params go by
/// ir::param_fields(): int params into the 19 int32 slots, eps/scale/theta into the floats;
/// unknown keys are skipped; FUSED writes its recipe id into flags bits 16-31. InvalidArgument
/// naming the task and param for a mistyped or out-of-range value (validate() rejects those too).
Result<amk_instruction_t> marshal_task(const ir::Task& t);

/// Per counter id: how many tasks signal it.
std::vector<uint32_t> counter_producers(const ir::Program& program);

}  // namespace amk::loader
