// tools/bench/copy_bandwidth.h: the device's achievable memory bandwidth, the denominator of every
// "% of bandwidth" amk-bench prints. A device-to-device copy of a buffer much larger than L2, timed
// with stream events; bytes read + bytes written over the median time (the convention of the
// figures in issue 6: torch's D2D copy on an H200 gives ~4.2 TB/s).
#pragma once
#include <cstddef>

#include "ir/status.h"

namespace amk::bench {

struct CopyBandwidth {
  double gbs = 0.0;         ///< (read + write) bytes / median time, GB/s (1e9)
  double median_ms = 0.0;   ///< one copy of `bytes`
  size_t bytes = 0;
};

/// Copy `bytes` (default 1 GiB) device to device `reps` times after two warm-ups.
[[nodiscard]] Result<CopyBandwidth> measure_copy_bandwidth(size_t bytes = size_t{1} << 30, int reps = 20);

}  // namespace amk::bench
