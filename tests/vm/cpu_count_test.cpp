// tests/vm/cpu_count_test.cpp: the CPU VM's default worker count follows the CPUs the process
// may use (affinity mask, cgroup quota), not the machine's count.
#include <catch2/catch.hpp>

#include <thread>

#include "vm/cpu_count.h"

#if defined(__linux__)
#include <sched.h>
#endif

using namespace amk;

TEST_CASE("cpu count: cgroup v2 cpu.max", "[vm][cpu_count]") {
  CHECK(vm::cpus_from_cgroup_max("200000 100000") == 2);
  CHECK(vm::cpus_from_cgroup_max("150000 100000\n") == 2);  // a part CPU counts as one more worker
  CHECK(vm::cpus_from_cgroup_max("50000 100000") == 1);
  CHECK(vm::cpus_from_cgroup_max("1600000 100000") == 16);
  CHECK_FALSE(vm::cpus_from_cgroup_max("max 100000"));  // no quota
  CHECK_FALSE(vm::cpus_from_cgroup_max(""));
  CHECK_FALSE(vm::cpus_from_cgroup_max("200000"));
  CHECK_FALSE(vm::cpus_from_cgroup_max("200000 0"));
  CHECK_FALSE(vm::cpus_from_cgroup_max("2e5 100000"));
  CHECK_FALSE(vm::cpus_from_cgroup_max("200000 100000 7"));
  CHECK_FALSE(vm::cpus_from_cgroup_max("-5 100000"));
}

TEST_CASE("cpu count: cgroup v1 cfs quota and period", "[vm][cpu_count]") {
  CHECK(vm::cpus_from_cfs("400000", "100000") == 4);
  CHECK(vm::cpus_from_cfs("250000\n", "100000\n") == 3);
  CHECK_FALSE(vm::cpus_from_cfs("-1", "100000"));  // no quota
  CHECK_FALSE(vm::cpus_from_cfs("", "100000"));
  CHECK_FALSE(vm::cpus_from_cfs("400000", "x"));
}

TEST_CASE("cpu count: at least one, at most the machine's, and the affinity mask binds", "[vm][cpu_count]") {
  const int n = vm::available_cpus();
  CHECK(n >= 1);
  CHECK(n <= static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
#if defined(__linux__)
  // A thread pinned to one CPU may use one: its own affinity mask is what available_cpus reads.
  int pinned = -1;
  std::thread t([&] {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) return;
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &mine)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;
    pinned = vm::available_cpus();
  });
  t.join();
  CHECK(pinned == 1);
#endif  // __linux__
}
