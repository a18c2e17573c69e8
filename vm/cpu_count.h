// vm/cpu_count.h: how many CPUs this process may actually run on, the CPU VM's default worker
// count. std::thread::hardware_concurrency() counts the machine's online CPUs, so in a container
// pinned to 2 of 64 CPUs (a cpuset) or limited to 2 CPUs of time (a cgroup quota) it says 64,
// and 64 workers on 2 CPUs' worth of time run a tiny Llama ~6x slower than 2 (docs/STATUS.md,
// session 28).
#pragma once
#include <optional>
#include <string>

namespace amk::vm {

/// The CPUs this process may use: the smallest of the calling thread's affinity mask, the cgroup
/// CPU quota (v2 cpu.max or v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up) and
/// hardware_concurrency(); at least 1. Linux reads the first two; elsewhere it is
/// hardware_concurrency().
int available_cpus();

/// The CPUs a cgroup v2 `cpu.max` file grants ("QUOTA PERIOD" -> ceil(QUOTA / PERIOD), at least
/// 1), or nothing for "max PERIOD" (no quota) and text that is not that format.
std::optional<int> cpus_from_cgroup_max(const std::string& text);

/// The same for cgroup v1's two files: cpu.cfs_quota_us ("-1": no quota) and cpu.cfs_period_us.
std::optional<int> cpus_from_cfs(const std::string& quota_us, const std::string& period_us);

}  // namespace amk::vm
