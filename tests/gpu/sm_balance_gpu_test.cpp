// tests/gpu/sm_balance_gpu_test.cpp: the SMs that stream faster (docs/SM_BALANCE.md). The
// calibration measures every SM; a schedule with fast SMs (ScheduleConfig::fast_sms) computes what
// the CPU VM does; and after a launch the executor runs the heavier queues on the faster SMs.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "tests/gpu/gpu_harness.h"
#include "vm/cuda/persistent_kernel.h"
#include "vm/cuda/sm_speed.h"

using namespace amk;

namespace {

ir::Program tiny_with_fast_sms(int64_t fast) {
  schedule::DecodePreset preset;
  preset.fast_sms = fast;
  return gputest::lower_tiny_preset(preset, ir::DType::F32, ir::DType::F32);
}

}  // namespace

TEST_CASE("gpu SM speeds: every SM measured once, relative to the median", "[gpu][sm_balance]") {
  gputest::require_gpu();
  auto speeds = vm::gpuvm::measure_sm_speeds(2, 3);
  INFO(speeds.status().message());
  REQUIRE(speeds.is_ok());
  int measured = 0;
  std::vector<double> seen;
  for (double v : speeds->by_sm)
    if (v > 0.0) {
      ++measured;
      seen.push_back(v);
      CHECK(v < 4.0);  // no SM streams four times the median: a unit or timer mix-up
    }
  // One block per SM (128 KiB of shared memory each): every SM ran one.
  CHECK(measured == gputest::device_sm_count());
  std::sort(seen.begin(), seen.end());
  CHECK(seen[seen.size() / 2] == Approx(1.0).epsilon(0.02));
  CHECK(speeds->fast >= 0);
  CHECK(speeds->fast < measured / 2);  // "fast" is the minority by construction of the median
  WARN("fast SMs: " << speeds->fast << " of " << measured << " at " << speeds->fast_speed << "x the median");
  CHECK_FALSE(vm::gpuvm::measure_sm_speeds(0, 1).is_ok());
}

TEST_CASE("gpu SM balance: a schedule with fast SMs equals the CPU VM", "[gpu][sm_balance]") {
  gputest::require_gpu();
  const ir::Program p = tiny_with_fast_sms(8);
  REQUIRE(p.config.has_value());
  REQUIRE(p.config->fast_sms == 8);
  gputest::check_gpu_equals_cpu_random(p, 7, 1, 4, 2e-3);
}

TEST_CASE("gpu SM balance: after a launch the heavier queues run on the SMs given as faster", "[gpu][sm_balance]") {
  gputest::require_gpu();
  const ir::Program p = tiny_with_fast_sms(8);
  auto image = gputest::load(p);
  const int32_t n = image->view().n_sms;
  // Synthetic speeds, so the check does not rest on the chip: every third SM that exists twice
  // as fast. Only SMs that exist get a speed: a queue ranked for an SM id no block lands on is
  // left to whichever block walks to it first (sm_claim.h), a fast SM's queue included.
  auto present = vm::gpuvm::measure_sm_speeds(1, 1);
  INFO(present.status().message());
  REQUIRE(present.is_ok());
  vm::GpuOptions opt;
  opt.sm_speeds.assign(present->by_sm.size(), 0.0);
  std::set<int32_t> fast_sms;
  for (size_t sm = 0, seen = 0; sm < present->by_sm.size(); ++sm) {
    if (present->by_sm[sm] <= 0.0) continue;
    opt.sm_speeds[sm] = seen % 3 == 0 ? 2.0 : 1.0;
    if (seen++ % 3 == 0) fast_sms.insert(static_cast<int32_t>(sm));
  }
  auto ex = vm::make_cuda_executor(*image, opt);
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  const vm::GpuKernelReport* rep = vm::gpu_kernel_report(**ex);
  REQUIRE(rep != nullptr);
  CHECK(rep->sm_balance != "off");
  CHECK(rep->balance_moves == 0);
  vm::LaunchOptions plain;
  Status st = (*ex)->launch(0, plain, nullptr);
  INFO(st.message());
  REQUIRE(st.is_ok());
  CHECK(rep->sm_claims == vm::gpuvm::kernel_claims_by_sm());
  // Without claims the first launch's placement gives the first table; with them there is none.
  CHECK(rep->balance_moves == (rep->sm_claims ? 0 : 1));
  vm::LaunchTrace tr;
  vm::LaunchOptions traced;
  traced.trace = &tr;
  st = (*ex)->launch(1, traced, nullptr);
  REQUIRE(st.is_ok());
  INFO("tables handed out: " << rep->balance_moves << " (more than 1: the placement moved between launches)");
  REQUIRE(tr.worker_sm.size() == static_cast<size_t>(n));
  // Each queue's load as the executor counts it: its tasks' est_bytes.
  std::vector<double> load(static_cast<size_t>(n), 0.0);
  for (const ir::Task& t : image->program().tasks) load[static_cast<size_t>(*t.sm)] += static_cast<double>(t.est_bytes);
  double lightest_fast = 1e300, heaviest_slow = 0.0;
  for (int32_t w = 0; w < n; ++w) {
    const int32_t sm = tr.worker_sm[static_cast<size_t>(w)];
    REQUIRE(sm >= 0);
    if (fast_sms.count(sm) != 0) lightest_fast = std::min(lightest_fast, load[static_cast<size_t>(w)]);
    else heaviest_slow = std::max(heaviest_slow, load[static_cast<size_t>(w)]);
  }
  if (rep->sm_claims) {
    // Claimed at the launch itself: the heavy queues are on the fast SMs in every launch.
    CHECK(lightest_fast >= heaviest_slow);
  } else {
    // The table follows the last launch's placement, which moves between launches (row 211): all
    // a table build promises is a table per placement seen (each traced launch resets the
    // recording, and the placement it saw gave a table unless it was the one already balanced).
    CHECK(rep->balance_moves >= 1);
    CHECK(rep->block_workers != "identity");
  }
}

TEST_CASE("gpu SM balance: off where the table is fixed or AMK_SM_BALANCE=0", "[gpu][sm_balance]") {
  gputest::require_gpu();
  const ir::Program p = tiny_with_fast_sms(8);
  auto image = gputest::load(p);
  {
    gputest::ScopedEnv env("AMK_SM_BALANCE", "0");
    auto ex = vm::make_cuda_executor(*image);
    REQUIRE(ex.is_ok());
    CHECK(vm::gpu_kernel_report(**ex)->sm_balance == "off (AMK_SM_BALANCE=0)");
  }
  gputest::ScopedEnv env("AMK_BLOCK_WORKERS", "reverse");
  auto ex = vm::make_cuda_executor(*image);
  REQUIRE(ex.is_ok());
  CHECK(vm::gpu_kernel_report(**ex)->sm_balance == "off (the block -> worker table is fixed)");
  REQUIRE((*ex)->launch(0, vm::LaunchOptions{}, nullptr).is_ok());
  CHECK(vm::gpu_kernel_report(**ex)->block_workers == "reverse");
}

#endif  // AMK_GPU_TESTS
