// tools/bench/launch_bench_nogpu.cpp: `amk-bench launch` in a build without the CUDA VM.
#include <iostream>

#include "tools/bench/launch_bench.h"

namespace amk::bench {

int run_launch_bench(const LaunchBenchOptions& options) {
  (void)options;
  std::cerr << "amk-bench launch: this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON)\n";
  return 3;
}

}  // namespace amk::bench
