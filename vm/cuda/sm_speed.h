// vm/cuda/sm_speed.h: how fast each SM streams from HBM while every SM streams (docs/SM_BALANCE.md).
// On an H100, 24 of 132 SMs (whole TPCs) streamed 1.25-1.3x as fast as the rest in
// amk-stream-probe, the same SMs in every launch; which ones differs from chip to chip. The
// executor measures this once per process and runs a schedule's heavier queues (wide tiles:
// ScheduleConfig::fast_sms) on the faster SMs; amk-bench counts them for the preset.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "targets/gpu_vendor.h"
#include "ir/status.h"

namespace amk::vm::gpuvm {
inline namespace AMK_GPU_VENDOR_NS {  // CUDA and HIP builds link side by side (targets/gpu_vendor.h)

/// Each SM's streaming speed relative to the median SM's (1.0), indexed by the hardware SM id
/// (%smid); 0 for an id no block ran on.
struct SmSpeeds {
  std::vector<double> by_sm;
  /// How many SMs are at least kFastSmThreshold times as fast as the median.
  int fast = 0;
  /// Their median speed (1.0 when there are none).
  double fast_speed = 1.0;
};

/// An SM counts as fast from this speed on. The measured speeds are bimodal (0.98-1.02 and
/// 1.25-1.3 on an H100), so anything between separates them.
inline constexpr double kFastSmThreshold = 1.1;

/// Stream `mib_per_sm` MiB through every SM at once (one block each, bulk copies into shared
/// memory on sm_90, 16-byte loads elsewhere), `launches` times; each block's time by its SM id,
/// the median over the launches. A few ms in all. Unsupported on HIP (no SM id is read there).
[[nodiscard]] Result<SmSpeeds> measure_sm_speeds(int mib_per_sm = 4, int launches = 5);

/// Per-SM speeds from `launches` x `blocks` records: launch l's block b ran on SM sm[l][b] and
/// took ns[l][b]. Each SM's time is its median over the launches; its speed is the median SM's
/// time over its own. Records with a negative SM or no time are left out. Host code, tested on the
/// CPU (tests/vm/sm_speed_test.cpp).
inline SmSpeeds sm_speeds_from_times(const std::vector<std::vector<int32_t>>& sm,
                                     const std::vector<std::vector<uint64_t>>& ns) {
  std::vector<std::vector<double>> per_sm;
  for (size_t l = 0; l < sm.size() && l < ns.size(); ++l)
    for (size_t b = 0; b < sm[l].size() && b < ns[l].size(); ++b) {
      if (sm[l][b] < 0 || ns[l][b] == 0) continue;
      const auto id = static_cast<size_t>(sm[l][b]);
      if (per_sm.size() <= id) per_sm.resize(id + 1);
      per_sm[id].push_back(static_cast<double>(ns[l][b]));
    }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  std::vector<double> time(per_sm.size(), 0.0), seen;
  for (size_t id = 0; id < per_sm.size(); ++id)
    if (!per_sm[id].empty()) seen.push_back(time[id] = median(per_sm[id]));
  SmSpeeds out;
  out.by_sm.assign(per_sm.size(), 0.0);
  const double typical = median(seen);
  std::vector<double> fast;
  for (size_t id = 0; id < time.size(); ++id) {
    if (time[id] <= 0.0) continue;
    out.by_sm[id] = typical / time[id];
    if (out.by_sm[id] >= kFastSmThreshold) fast.push_back(out.by_sm[id]);
  }
  out.fast = static_cast<int>(fast.size());
  out.fast_speed = fast.empty() ? 1.0 : median(fast);
  return out;
}

}  // namespace AMK_GPU_VENDOR_NS
}  // namespace amk::vm::gpuvm
