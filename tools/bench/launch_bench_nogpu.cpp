// tools/bench/launch_bench_nogpu.cpp: `amk-bench launch` in a build without the CUDA VM.
#include "tools/bench/bench_report.h"
#include "tools/bench/launch_bench.h"

namespace amk::bench {

int run_launch_bench(const LaunchBenchOptions& options) {
  return bench_fail("launch", options.json, 3, "Unsupported",
                    "this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON on a machine with the "
                    "CUDA toolkit)");
}

}  // namespace amk::bench
