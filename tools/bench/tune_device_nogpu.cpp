// tools/bench/tune_device_nogpu.cpp: the device half of `amk-bench tune` in a build without the CUDA
// VM: the host checks have passed, and this says there is no GPU backend and exits 3.
#include "tools/bench/bench_report.h"
#include "tools/bench/tune_bench.h"

namespace amk::bench {

int run_tune_on_device(const TuneBenchOptions& options, const schedule::ModelConfig&, const TuneSpace&, int64_t) {
  return bench_fail("tune", options.json, 3, "Unsupported",
                    "this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON on a machine with the "
                    "CUDA toolkit)");
}

}  // namespace amk::bench
