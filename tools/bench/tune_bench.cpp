// tools/bench/tune_bench.cpp: see tune_bench.h. The host checks of `amk-bench tune`, run before any
// device is touched.
#include "tools/bench/tune_bench.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "targets/registry.h"
#include "ir/json.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/decode_bench.h"

namespace amk::bench {

int run_tune_bench(const TuneBenchOptions& o) {
  const auto fail = [&](const std::string& what) { return bench_fail("tune", o.json, 1, bench_error_code(1), what); };
  if (o.ctx.empty()) return fail("--ctx needs at least one length");
  if (*std::min_element(o.ctx.begin(), o.ctx.end()) < 1) return fail("--ctx lengths must be >= 1");
  if (o.tokens < 1 || o.warmup < 0 || o.check_steps < 1 || o.rounds < 1 || o.search.max_passes < 1 ||
      o.search.max_candidates < 1 || !(o.search.min_gain >= 0.0 && o.search.min_gain < 1.0))
    return fail("--tokens, --check-steps, --rounds, --passes and --max-candidates must be >= 1, --warmup >= 0, "
                "--min-gain in [0, 99] percent");
  Result<schedule::ModelConfig> model = schedule::model_config_load(o.model);
  if (!model) return fail(model.status().message());
  const int64_t max_seq = bench_max_seq(*std::max_element(o.ctx.begin(), o.ctx.end()), o.check_steps);
  Result<TuneSpace> space = o.space.empty() ? Result<TuneSpace>(default_tune_space(*model, max_seq))
                                            : tune_space_load(o.space);
  if (!space) return fail(space.status().message());
  if (o.target != "auto") {  // a named target needs no device: refuse a typo before any GPU work
    Result<ir::GpuTarget> target = targets::target_resolve(o.target);
    if (!target) return fail(target.status().message());
  }
  if (!o.out.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(o.out, ec)) return fail("--out " + o.out + ": is a directory");
    // Refuse an unwritable --out now, not after minutes of measuring: a temporary file like the
    // one the result will go through, made and removed; nothing at `out` itself is touched.
    std::string probe;
    const int fd = ir::temp_file_beside(o.out, &probe);
    if (fd < 0) return fail("--out " + o.out + ": cannot create a file beside it: " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
  }
  return run_tune_on_device(o, *model, *space, max_seq);
}

}  // namespace amk::bench
