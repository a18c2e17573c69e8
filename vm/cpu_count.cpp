// vm/cpu_count.cpp: see cpu_count.h.
#include "vm/cpu_count.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace amk::vm {

namespace {

/// A whole decimal number (surrounding white space allowed), or nothing.
std::optional<long long> whole_number(const std::string& text) {
  std::istringstream in(text);
  long long v = 0;
  std::string rest;
  if (!(in >> v) || (in >> rest)) return std::nullopt;
  return v;
}

std::optional<int> quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<int>(std::clamp<long long>((quota + period - 1) / period, 1, 1 << 20));
}

#if defined(__linux__)
std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::optional<int> tighter(std::optional<int> a, std::optional<int> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

/// The CPU quota of this process's cgroup, v2 (and every cgroup above it: the tightest binds) or
/// v1 (its own group's cpu controller), from /proc/self/cgroup's "N:controllers:path" lines.
std::optional<int> cgroup_quota_cpus() {
  std::optional<int> best;
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string rel = line.substr(b + 1);
    if (controllers.empty()) {  // v2: "0::/path"
      for (;;) {
        best = tighter(best, cpus_from_cgroup_max(first_line("/sys/fs/cgroup" + (rel == "/" ? "" : rel) + "/cpu.max")));
        if (rel.empty() || rel == "/") break;
        const size_t slash = rel.find_last_of('/');
        rel = slash == 0 || slash == std::string::npos ? "/" : rel.substr(0, slash);
      }
      continue;
    }
    if (("," + controllers + ",").find(",cpu,") == std::string::npos) continue;  // v1, not cpu
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      // Inside a container the mount is its own group: the path may not exist under it.
      for (const std::string& dir : {std::string(mount) + (rel == "/" ? "" : rel), std::string(mount)}) {
        const std::string quota = first_line(dir + "/cpu.cfs_quota_us");
        if (quota.empty()) continue;
        best = tighter(best, cpus_from_cfs(quota, first_line(dir + "/cpu.cfs_period_us")));
        break;
      }
    }
  }
  return best;
}
#endif  // __linux__

}  // namespace

std::optional<int> cpus_from_cgroup_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota, period, rest;
  if (!(in >> quota >> period) || (in >> rest) || quota == "max") return std::nullopt;
  const std::optional<long long> q = whole_number(quota), p = whole_number(period);
  return q && p ? quota_cpus(*q, *p) : std::nullopt;
}

std::optional<int> cpus_from_cfs(const std::string& quota_us, const std::string& period_us) {
  const std::optional<long long> q = whole_number(quota_us), p = whole_number(period_us);
  return q && p ? quota_cpus(*q, *p) : std::nullopt;  // quota -1: none
}

int available_cpus() {
  int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = std::min(n, std::max(1, CPU_COUNT(&set)));
  if (const std::optional<int> quota = cgroup_quota_cpus()) n = std::min(n, *quota);
#endif  // __linux__
  return std::max(1, n);
}

}  // namespace amk::vm
