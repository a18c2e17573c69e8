// tests/tools/amk_soak_test.cpp: amk-soak's command line. `--backend cuda` (and hip) on a machine or
// build without that GPU fails cleanly, like amk-run: exit 4, a message naming the reason (no GPU
// found, with the device-count call's error, in a build with the VM; "built without the ... VM"
// and the configure flag otherwise) and the hint to use the CPU. On a machine that has the GPU it
// checks instead that a short soak runs and prints the device-memory column. A short CPU soak
// prints VmRSS only, and bad flags are usage errors (exit 2).
#include <catch2/catch.hpp>

#include <string>

#include "tools/tool_runner.h"
#include "vm/gpu_backends.h"

using amk::test::run_tool;
using amk::test::shell_quote;
using Catch::Contains;

namespace {
const std::string kModel = shell_quote(AMK_SOURCE_DIR "/examples/tiny_llama/program.json") + " --weights " +
                           shell_quote(AMK_SOURCE_DIR "/tests/fixtures/tiny_llama/model.safetensors");
constexpr int kExitFlat = 0;
constexpr int kExitUsage = 2;
constexpr int kExitBackendUnavailable = 4;  // tools/amk_soak.cpp, as tools/amk_run.cpp
}  // namespace

TEST_CASE("amk-soak --backend cuda|hip without that GPU exits 4 and says why", "[tools]") {
  struct Gpu {
    const char* backend;
    bool available;
    const char* no_device;  // gpu_backends_cuda.cpp: "<kNoDevice> (<count call>: ..."
    const char* no_build;   // gpu_backends.cpp: kNoCudaBuild / kNoHipBuild
  };
  for (const Gpu& g : {Gpu{"cuda", amk::vm::cuda_available(nullptr), "no CUDA GPU found (cudaGetDeviceCount: ",
                           "this amk was built without the CUDA VM (configure with -DAMK_CUDA=ON"},
                       Gpu{"hip", amk::vm::hip_available(nullptr), "no AMD GPU found (hipGetDeviceCount: ",
                           "this amk was built without the HIP VM (configure with -DAMK_HIP=ON"}}) {
    const std::string backend = g.backend;
    // 40 tokens in 4 samples: quick on a GPU; never decoded without one.
    const auto r = run_tool(AMK_SOAK_BIN, kModel + " --backend " + backend + " --tokens 40 --sample-every 10");
    INFO("backend " << backend << "\nstdout: " << r.out << "\nstderr: " << r.err);
    if (g.available) {  // the GPU is present: the soak must run and report device memory
      CHECK(r.exit_code == kExitFlat);
      CHECK_THAT(r.out, Contains("device_used_MiB") && Contains("amk-soak: device memory in use (") &&
                            Contains("): FLAT"));
      continue;
    }
    CHECK(r.exit_code == kExitBackendUnavailable);
    CHECK_THAT(r.err, Contains("amk-soak: ") && Contains("backend " + backend + " is not available: "));
    CHECK_THAT(r.err, Contains(amk::vm::gpu_backend_built(backend) ? g.no_device : g.no_build));
    CHECK_THAT(r.err, Contains("hint: use --backend cpu"));
    CHECK(r.out.find("VmRSS_KiB") == std::string::npos);  // nothing decoded, no sample table
  }
}

TEST_CASE("amk-soak on the CPU VM samples VmRSS across a reset and has no device column", "[tools]") {
  // 300 tokens: one reset at max_seq 256. The VmRSS limit is wide on purpose: this checks the tool,
  // not the allocator (a sanitizer build's quarantine grows RSS); scripts/soak.sh runs the real soak.
  const auto r = run_tool(AMK_SOAK_BIN, kModel + " --backend cpu --threads 2 --tokens 300 --sample-every 100 "
                                                 "--limit-kib 1000000");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == kExitFlat);
  CHECK_THAT(r.out, Contains("VmRSS_KiB") && Contains("300 tokens on cpu in 2 sequences") &&
                        Contains("(1 resets)") && Contains("): FLAT"));
  CHECK(r.out.find("device") == std::string::npos);
}

TEST_CASE("amk-soak usage errors exit 2 and name the flag", "[tools]") {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {Case{" --backend tpu", "amk-soak: --backend: tpu not in {auto,cpu,cuda,hip}"},
                        Case{" --max-device-growth-mib -1",
                             "amk-soak: --max-device-growth-mib: Value -1 not in range 0 to 2147483647"},
                        Case{" --tokens 0", "amk-soak: --tokens: Value 0 not in range 1 to 2147483647"},
                        Case{" --tokens 10 --sample-every 10", "amk-soak: need two samples: --tokens 10 with "
                                                               "--sample-every 10 gives 1"}}) {
    const auto r = run_tool(AMK_SOAK_BIN, kModel + c.args);
    INFO("args:" << c.args << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.exit_code == kExitUsage);
    CHECK_THAT(r.err, Contains(c.message));
  }
}
