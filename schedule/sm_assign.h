// schedule/sm_assign.h: the `sm_assignment` knob resolved into each Task.sm (internal).
// Per-SM queues are the task list filtered by sm, and the list is in stage (topological) order,
// so every assignment yields queues that are linear extensions of the DAG: none can deadlock.
#pragma once
#include <string>

#include "ir/program.h"
#include "ir/status.h"

namespace amk::schedule {

/// The named sm_assignment policies (a schedule may also give an explicit {task_id: sm} map).
inline constexpr const char* kSmPolicies[] = {"round_robin", "load_balance", "stage_balance"};

/// Whether `name` is one of kSmPolicies.
bool is_sm_policy(const std::string& name);

/// The refusal of an unknown policy name, listing the known ones.
Status unknown_sm_policy(const std::string& name);

/// Set every task's sm from `config.sm_assignment`:
///  - "round_robin": task i -> sm i % num_sms;
///  - "load_balance": each task, in list order, to the SM with the least est_bytes so far (ties to
///    the lowest SM index);
///  - "stage_balance": each task to the SM with the least est_bytes, then tasks, in its own stage
///    (the tasks releasing one counter), then the least est_bytes so far, then the lowest index;
///  - {task_id: sm}: as given; every task must be listed and every sm in [0, num_sms).
/// A target with num_sms == 0 (the CPU VM, which sizes itself at run time) leaves every sm unset
/// for the named policies and refuses an explicit map. Errors are InvalidArgument naming the knob.
[[nodiscard]] Status assign_sms(ir::Program& program, const ir::ScheduleConfig& config, const ir::GpuTarget& target);

}  // namespace amk::schedule
