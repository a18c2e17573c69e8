// tools/bench/tune_bench.cpp: see tune_bench.h. The host checks of `amk-bench tune`, run before any
// device is touched, and the atomic writer of the result.
#include "tools/bench/tune_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/bench/bench_report.h"
#include "tools/bench/decode_bench.h"

namespace amk::bench {

Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(StatusCode::IoError, tmp + ": cannot create the file");
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return Status(StatusCode::IoError, tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status(StatusCode::IoError, path + ": cannot rename " + tmp + " over it");
  }
  return Status::ok();
}

int run_tune_bench(const TuneBenchOptions& o) {
  const auto fail = [&](const std::string& what) { return bench_fail("tune", o.json, 1, bench_error_code(1), what); };
  if (o.ctx.empty()) return fail("--ctx needs at least one length");
  if (*std::min_element(o.ctx.begin(), o.ctx.end()) < 1) return fail("--ctx lengths must be >= 1");
  if (o.tokens < 1 || o.warmup < 0 || o.check_steps < 1 || o.rounds < 1 || o.search.max_passes < 1 ||
      o.search.max_candidates < 1 || !(o.search.min_gain >= 0.0 && o.search.min_gain < 1.0))
    return fail("--tokens, --check-steps, --rounds, --passes and --max-candidates must be >= 1, --warmup >= 0, "
                "--min-gain in [0, 100) percent");
  Result<schedule::ModelConfig> model = schedule::model_config_load(o.model);
  if (!model) return fail(model.status().message());
  const int64_t max_seq = bench_max_seq(*std::max_element(o.ctx.begin(), o.ctx.end()), o.check_steps);
  Result<TuneSpace> space = o.space.empty() ? Result<TuneSpace>(default_tune_space(*model, max_seq))
                                            : tune_space_load(o.space);
  if (!space) return fail(space.status().message());
  if (!o.out.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(o.out, ec)) return fail("--out " + o.out + ": is a directory");
    // Refuse an unwritable --out now, not after minutes of measuring. The probe is the temporary
    // file the result goes through, so nothing at `out` itself is touched yet.
    const std::string probe = o.out + ".tmp";
    std::ofstream test(probe, std::ios::binary | std::ios::trunc);
    if (!test) return fail("--out " + o.out + ": cannot create " + probe);
    test.close();
    std::remove(probe.c_str());
  }
  return run_tune_on_device(o, *model, *space, max_seq);
}

}  // namespace amk::bench
