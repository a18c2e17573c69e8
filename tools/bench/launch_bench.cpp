// tools/bench/launch_bench.cpp: see launch_bench.h. CUDA builds only (launch_bench_nogpu.cpp
// otherwise). The programs go through validate() and the loader like any other.
#include "tools/bench/launch_bench.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/validate.h"
#include "loader/loader.h"
#include "targets/gpu.h"
#include "tools/bench/bench_report.h"
#include "vm/cuda/cuda_executor.h"

namespace amk::bench {
namespace {

constexpr int kExitOk = 0, kExitGpu = 3;

/// `per_sm` NOPs on each of `sms` workers; with `hop`, worker i's NOP waits on worker i-1's.
ir::Program nop_program(int sms, int per_sm, bool hop) {
  ir::Program p;
  p.meta["model"] = hop ? "nop-hop-chain" : "nop";
  for (int w = 0; w < sms; ++w) {
    for (int k = 0; k < per_sm; ++k) {
      const auto id = static_cast<int32_t>(p.tasks.size());
      ir::Counter c;
      c.id = ir::CounterId(id);
      p.counters.push_back(c);
      ir::Task t;
      t.id = ir::TaskId(id);
      t.op = ir::Opcode::Nop;
      t.out_counter = ir::CounterId(id);
      t.sm = w;
      if (hop && w > 0) t.waits.push_back(ir::Wait{ir::CounterId(id - per_sm), 1});
      t.label = "nop.sm" + std::to_string(w) + "." + std::to_string(k);
      p.tasks.push_back(t);
    }
  }
  return p;
}

/// The median device time of `prog`'s launches; with `floor_us`, also that of an empty kernel
/// launched with the same geometry (vm::gpu_empty_launch_us).
Status time_program(const ir::Program& prog, int launches, double* median_us, double* floor_us = nullptr) {
  const ir::ValidationResult v = ir::validate(prog);
  if (!v.ok) return Status(StatusCode::Internal, "the benchmark's NOP program was rejected: " + v.report());
  auto image = loader::load_program(prog, loader::LoadOptions{});
  if (!image) return image.status();
  auto ex = vm::make_cuda_executor(**image);
  if (!ex) return ex.status();
  std::vector<double> us;
  for (int i = 0; i < 20 + launches; ++i) {
    vm::LaunchStats st;
    Status s = (*ex)->launch(0, vm::LaunchOptions{}, &st);
    if (!s) return s;
    if (i >= 20) us.push_back(st.device_us);
  }
  std::sort(us.begin(), us.end());
  *median_us = us[us.size() / 2];
  return floor_us != nullptr ? vm::gpu_empty_launch_us(**ex, launches, floor_us) : Status::ok();
}

}  // namespace

int run_launch_bench(const LaunchBenchOptions& o) {
  const auto fail = [&](const std::string& what) {
    return bench_fail("launch", o.json, kExitGpu, bench_error_code(kExitGpu), what);
  };
  const std::string device = vm::cuda_device_name();
  if (device.rfind("no GPU", 0) == 0) return fail(device);
  // One worker per SM, the same grid a lowered program for this device gets.
  int dev = 0;
  gpu::DeviceProps props{};
  if (gpu::get_device(&dev) != gpu::kSuccess || gpu::device_props(&props, dev) != gpu::kSuccess)
    return fail("cannot read the properties of " + device);
  const int sms = props.multiProcessorCount;
  if (sms < 2) return fail("the per-hop figure needs at least 2 SMs; " + device + " has " + std::to_string(sms));
  double empty = 0, floor = 0, chain = 0, hop = 0;
  Status s = time_program(nop_program(sms, 1, false), o.launches, &empty, &floor);
  if (s) s = time_program(nop_program(sms, o.chain, false), o.launches, &chain);
  if (s) s = time_program(nop_program(sms, 1, true), o.launches, &hop);
  if (!s) return fail(s.message());
  const double per_task = (chain - empty) / (o.chain - 1);
  const double per_hop = (hop - empty) / (sms - 1);
  if (o.json) {
    tools::Json j = bench_document("launch");
    tools::json_succeed(j);
    j["device"] = device;
    j["workers"] = sms;
    j["empty_launch_us"] = empty;
    j["empty_kernel_us"] = floor;
    j["per_task_us"] = per_task;
    j["per_hop_us"] = per_hop;
    j["launches"] = o.launches;
    std::cout << tools::json_text(j);
  } else {
    std::printf("device: %s, %d workers, median of %d launches (stream events around the kernel)\n", device.c_str(),
                sms, o.launches);
    std::printf("empty launch (one NOP per SM)      %8.2f us   (target <= 10 us)\n", empty);
    std::printf("  of which an empty kernel         %8.2f us   (same grid, block and shared memory)\n", floor);
    std::printf("per task (%d NOPs per SM)          %8.3f us\n", o.chain, per_task);
    std::printf("per cross-SM hop (chain of %d)     %8.3f us\n", sms, per_hop);
  }
  return kExitOk;
}

}  // namespace amk::bench
