// tests/gpu/kernel_choice_gpu_test.cpp: AMK_KERNEL, the measuring knob that runs a program on
// another of the CUDA build's kernels (persistent_kernel.h, KernelEntry) to time a kernel's code
// apart from the schedule. The tiny Llama's preset schedule without rope in qkv runs on each of the
// four kernels and equals the CPU VM; a kernel without a recipe the program needs, or a name that
// is no kernel, is refused at load with the setting named.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <string>

#include "gpu_harness.h"
#include "loader/loader.h"
#include "schedule/decode_preset.h"
#include "vm/cuda/cuda_executor.h"
#include "vm/golden_fixture.h"
#include "vm/session.h"

using namespace amk;

namespace {

// make_cuda_executor's status for `p` (random weights) under the environment as it is.
Status executor_status(const ir::Program& p, std::string* kernel) {
  loader::LoadOptions lo;
  lo.random_weights_seed = 11;
  auto image = loader::load_program(p, lo);
  REQUIRE(image.is_ok());
  auto ex = vm::make_cuda_executor(**image);
  if (!ex.is_ok()) return ex.status();
  const vm::GpuKernelReport* rep = vm::gpu_kernel_report(**ex);
  REQUIRE(rep != nullptr);
  *kernel = rep->kernel;
  return Status::ok();
}

}  // namespace

TEST_CASE("gpu AMK_KERNEL: the schedule without step-position GEMVs on every kernel equals the CPU VM", "[gpu]") {
  gputest::require_gpu();
  schedule::DecodePreset plain;  // the preset's rope in qkv needs recipes 10-12: not on every kernel
  plain.rope_in_qkv = false;
  const gputest::ScopedEnv no_override(schedule::kRopeInQkvEnv, "0");
  const ir::Program p = gputest::lower_tiny_preset(plain, ir::DType::F32, ir::DType::F32);
  const testing::Golden g = testing::load_golden();
  for (const char* name : {"default", "fold", "attention", "rope"}) {
    INFO("AMK_KERNEL=" << name);
    gputest::ScopedEnv env("AMK_KERNEL", name);
    std::string kernel;
    const Status s = executor_status(p, &kernel);
    INFO(s.message());
    REQUIRE(s.is_ok());
    CHECK(kernel == name);
    gputest::check_gpu_equals_cpu_random(p, 11, g.prompt.front(), 8, 1e-4);
  }
}

TEST_CASE("gpu AMK_KERNEL: a kernel without the program's recipes, or no kernel, is refused by name", "[gpu]") {
  gputest::require_gpu();
  std::string kernel;
  {
    gputest::ScopedEnv env("AMK_KERNEL", "bogus");
    const Status s = executor_status(gputest::lower_tiny_preset(schedule::DecodePreset{}, ir::DType::F32, ir::DType::F32),
                                     &kernel);
    CHECK(s.code() == StatusCode::InvalidArgument);
    CHECK(s.message().find("AMK_KERNEL=bogus") != std::string::npos);
  }
  schedule::DecodePreset rope;  // the preset's default: rope in the q / k GEMVs
  const gputest::ScopedEnv no_override(schedule::kRopeInQkvEnv, "1");
  REQUIRE(rope.rope_in_qkv);
  const ir::Program rope_program = gputest::lower_tiny_preset(rope, ir::DType::F32, ir::DType::F32);
  for (const char* name : {"default", "attention"}) {
    INFO("AMK_KERNEL=" << name);
    gputest::ScopedEnv env("AMK_KERNEL", name);
    const Status s = executor_status(rope_program, &kernel);
    CHECK(s.code() == StatusCode::Unsupported);
    CHECK(s.message().find("RMSNORM_GEMV_ROPE") != std::string::npos);
    CHECK(s.message().find("instruction ") != std::string::npos);  // names the task
  }
  {
    gputest::ScopedEnv env("AMK_KERNEL", "fold");  // the fold kernel runs step-position GEMVs too
    const Status s = executor_status(rope_program, &kernel);
    INFO(s.message());
    CHECK(s.is_ok());
    CHECK(kernel == "fold");
  }
  schedule::DecodePreset in_o;
  in_o.attention_in_o_proj = schedule::AttentionInOProj::On;
  const ir::Program in_o_program = gputest::lower_tiny_preset(in_o, ir::DType::F32, ir::DType::F32);
  for (const char* name : {"default", "rope"}) {
    INFO("AMK_KERNEL=" << name);
    gputest::ScopedEnv env("AMK_KERNEL", name);
    const Status s = executor_status(in_o_program, &kernel);
    CHECK(s.code() == StatusCode::Unsupported);
    CHECK(s.message().find("ATTENTION_GEMV_ADD") != std::string::npos);
    CHECK(s.message().find("instruction ") != std::string::npos);
  }
  // Without the knob the executor's own choice: the kernel that has the recipes.
  CHECK(executor_status(rope_program, &kernel).is_ok());
  CHECK(kernel == "rope");
  CHECK(executor_status(in_o_program, &kernel).is_ok());
  CHECK(kernel == "attention");
}

#endif  // AMK_GPU_TESTS
