// tools/bench/decode_bench_nogpu.cpp: `amk-bench decode` in a build without the CUDA VM: it says
// so and exits 3 (no GPU backend), as documented in amk-bench --help.
#include "tools/bench/bench_report.h"
#include "tools/bench/decode_bench.h"

namespace amk::bench {

int run_decode_bench(const DecodeBenchOptions& options) {
  return bench_fail("decode", options.json, 3, "Unsupported",
                    "this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON on a machine with the "
                    "CUDA toolkit)");
}

}  // namespace amk::bench
