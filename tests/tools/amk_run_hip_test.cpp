// tests/tools/amk_run_hip_test.cpp: `amk-run --backend hip` on a machine or build without an AMD
// GPU fails cleanly: exit code 4 ("backend not available", as README and --help document), a
// message naming the reason (no AMD GPU found, with the hipGetDeviceCount error, in a HIP build;
// "built without the HIP VM" and the configure flag otherwise) and the hint to use the CPU. The
// expected text follows this build's own configuration, so the test runs in every build. On a
// machine that does have an AMD GPU it checks instead that the run succeeds.
#include <catch2/catch.hpp>

#include <string>

#include "tools/tool_runner.h"
#include "vm/gpu_backends.h"

using amk::test::run_tool;
using amk::test::shell_quote;
using Catch::Contains;

namespace {
const std::string kArgs = shell_quote(AMK_SOURCE_DIR "/examples/tiny_llama/program.json") +
                          " --random-weights 1 --prompt-ids 1 --max-tokens 1 --backend hip";
constexpr int kExitBackendUnavailable = 4;  // tools/amk_run.cpp, README "amk-run" exit codes
}  // namespace

TEST_CASE("amk-run --backend hip without an AMD GPU exits 4 and says why", "[tools]") {
  const auto r = run_tool(AMK_RUN_BIN, kArgs);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  if (amk::vm::hip_available(nullptr)) {  // an AMD GPU is present: the backend must work
    CHECK(r.exit_code == 0);
    return;
  }
  CHECK(r.exit_code == kExitBackendUnavailable);
  CHECK_THAT(r.err, Contains("amk-run: ") && Contains("backend hip is not available: "));
  if (amk::vm::gpu_backend_built("hip")) {
    CHECK_THAT(r.err, Contains("no AMD GPU found (hipGetDeviceCount: "));
  } else {
    CHECK_THAT(r.err, Contains("this amk was built without the HIP VM (configure with -DAMK_HIP=ON"));
  }
  CHECK_THAT(r.err, Contains("hint: use --backend cpu"));
}
