// schedule/sm_assign.h: the `sm_assignment` knob resolved into each Task.sm (internal).
// Per-SM queues are the task list filtered by sm, and the list is in stage (topological) order,
// so every assignment yields queues that are linear extensions of the DAG: none can deadlock.
#pragma once
#include "ir/program.h"
#include "ir/status.h"

namespace amk::schedule {

/// Set every task's sm from `config.sm_assignment`:
///  - "round_robin": task i -> sm i % num_sms;
///  - "load_balance": each task, in list order, to the SM with the least est_bytes so far (ties to
///    the lowest SM index);
///  - {task_id: sm}: as given; every task must be listed and every sm in [0, num_sms).
/// A target with num_sms == 0 (the CPU VM, which sizes itself at run time) leaves every sm unset
/// for the named policies and refuses an explicit map. Errors are InvalidArgument naming the knob.
[[nodiscard]] Status assign_sms(ir::Program& program, const ir::ScheduleConfig& config, const ir::GpuTarget& target);

}  // namespace amk::schedule
