// tests/gpu/vm_gpu_test.cpp: the GPU VM's protocol: the toy decode program matches the CPU VM over
// thousands of launches (epoch thresholds, no counter memsets), a device error names the task and
// the next launch works, a stuck program times out within its deadline naming the stuck task and
// the process can run a good program afterwards, an unknown opcode is reported, and a grid that
// cannot be co-resident is refused instead of launched.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <chrono>

#include "gpu_harness.h"
#include "vm/cpu_vm.h"
#include "vm/toy_program.h"

using namespace amk;

namespace {

std::unique_ptr<vm::Executor> make_gpu(loader::ProgramImage& image, const vm::GpuOptions& options = {}) {
  auto ex = vm::make_cuda_executor(image, options);
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  return std::move(*ex);
}

/// `launches` toy decode steps on `gpu` (token and position cycle with `tok_step` / `pos_mod`);
/// every `every`-th step is replayed on `cpu`, whose logits and next token must match.
void check_toy_against_cpu(vm::Executor& gpu, loader::ProgramImage& gimg, vm::Executor& cpu, int launches, int every,
                           int tok_step, int pos_mod) {
  for (int i = 0; i < launches; ++i) {
    const int tok = (i * tok_step) % testing::kToyVocab;
    auto g = gputest::run_image_step(gpu, gimg, tok, i % pos_mod);
    INFO("launch " << i << ": " << g.status().message());
    REQUIRE(g.is_ok());
    if (i % every != 0) continue;
    REQUIRE(cpu.write_buffer(0, &tok, sizeof tok).is_ok());
    REQUIRE(cpu.launch(i % pos_mod, {}, nullptr).is_ok());
    float logits[testing::kToyVocab];
    int32_t next = -1;
    REQUIRE(cpu.read_buffer(6, logits, sizeof logits).is_ok());
    REQUIRE(cpu.read_buffer(7, &next, sizeof next).is_ok());
    for (int n = 0; n < testing::kToyVocab; ++n) CHECK(g->logits[n] == Approx(logits[n]).epsilon(1e-5).margin(1e-6));
    CHECK(g->next_token == next);
  }
}

}  // namespace

TEST_CASE("gpu vm: toy decode program matches the CPU VM over many launches", "[gpu][vm]") {
  gputest::require_gpu();
  for (int workers : {1, 3}) {
    auto cimg = gputest::load(testing::toy_program(), false, workers);
    auto gimg = gputest::load(testing::toy_program(), false, workers);
    auto cpu = vm::make_cpu_executor(*cimg);
    auto gpu = make_gpu(*gimg);
    check_toy_against_cpu(*gpu, *gimg, *cpu, 2000, 97, 1, 7);
  }
}

TEST_CASE("gpu vm: the loader warp staging 1 to 4 tasks ahead gives the CPU VM's results", "[gpu][vm][loader]") {
  gputest::require_gpu();
  // Three workers: each worker's next tasks wait on counters that the other workers release,
  // so a staged task is often published long after it was copied, and a worker's compute warps
  // run one task while its loader polls the next ones.
  // Both staging policies: the default stages a task only once the one before it is published;
  // AMK_STAGE_WHILE_POLLING=1 (the measuring knob) stages it as soon as its slot is free.
  // And every poll policy: by default (AMK_POLL_GATE=1) the loader polls a task's counters once,
  // then only after the task before it has finished; 0 (measuring) polls at any time, 2 only
  // after that. None may hang, whatever the staging.
  for (const char* while_polling : {"0", "1"}) {
    gputest::ScopedEnv policy("AMK_STAGE_WHILE_POLLING", while_polling);
    for (const char* gate : {"0", "1", "2"}) {
      gputest::ScopedEnv poll_gate("AMK_POLL_GATE", gate);
      for (int staged : {1, 2, 3, 4}) {
        INFO("staged tasks " << staged << ", AMK_STAGE_WHILE_POLLING=" << while_polling << ", AMK_POLL_GATE=" << gate);
        auto cimg = gputest::load(testing::toy_program(), false, 3);
        auto gimg = gputest::load(testing::toy_program(), false, 3);
        auto cpu = vm::make_cpu_executor(*cimg);
        vm::GpuOptions options;
        options.staged_tasks = staged;
        auto gpu = make_gpu(*gimg, options);
        const vm::GpuKernelReport* rep = vm::gpu_kernel_report(*gpu);
        REQUIRE(rep != nullptr);
        INFO(rep->summary());
        CHECK(rep->stage_while_polling == (while_polling[0] == '1'));
        CHECK(rep->poll_gate == gate[0] - '0');
#ifdef AMK_USE_HIP
        CHECK(rep->loader_warps == 0);
        CHECK(rep->staged_tasks == 1);
#else
        CHECK(rep->loader_warps == 1);
        CHECK(rep->staged_tasks == staged);
#endif  // AMK_USE_HIP
        check_toy_against_cpu(*gpu, *gimg, *cpu, 300, 37, 7, 5);
      }
    }
  }
}

TEST_CASE("gpu vm: queue bounds from the launch or from device memory give the CPU VM's results", "[gpu][vm][loader]") {
  gputest::require_gpu();
  // By default a block's queue bounds travel in the kernel's parameters (KernelArgs::
  // queue_offsets); AMK_QUEUE_BOUNDS_IN_ARGS=0 reads them from prog.sm_queue_offsets, the path a
  // launch of more than kMaxParamWorkers workers takes. Bounds off by one slot would run a task
  // twice or skip one: wrong logits, or a wait that times out.
  for (const char* in_args : {"1", "0"}) {
    gputest::ScopedEnv bounds("AMK_QUEUE_BOUNDS_IN_ARGS", in_args);
    for (int workers : {1, 3, 7}) {
      INFO("AMK_QUEUE_BOUNDS_IN_ARGS=" << in_args << ", " << workers << " workers");
      auto cimg = gputest::load(testing::toy_program(), false, workers);
      auto gimg = gputest::load(testing::toy_program(), false, workers);
      auto cpu = vm::make_cpu_executor(*cimg);
      auto gpu = make_gpu(*gimg);
      const vm::GpuKernelReport* rep = vm::gpu_kernel_report(*gpu);
      REQUIRE(rep != nullptr);
      CHECK(rep->queue_bounds_in_args == (in_args[0] == '1'));
      check_toy_against_cpu(*gpu, *gimg, *cpu, 200, 41, 3, 11);
    }
  }
}

TEST_CASE("gpu vm: a device error names the task and the next launch works", "[gpu][vm]") {
  gputest::require_gpu();
  auto image = gputest::load(testing::toy_program(), false, 2);
  auto gpu = make_gpu(*image);
  int bad = testing::kToyVocab + 3;
  REQUIRE(gpu->write_buffer(0, &bad, sizeof bad).is_ok());
  Status st = gpu->launch(0, {}, nullptr);
  INFO(st.message());
  REQUIRE(st.code() == StatusCode::DeviceError);
  CHECK_THAT(st.message(), Catch::Contains("task 0 (embed) EMBED"));
  CHECK_THAT(st.message(), Catch::Contains("INDEX_OUT_OF_RANGE"));
  int good = 2;
  REQUIRE(gpu->write_buffer(0, &good, sizeof good).is_ok());
  for (int i = 0; i < 3; ++i) CHECK(gpu->launch(1 + i, {}, nullptr).is_ok());
}

TEST_CASE("gpu vm: an unknown opcode is reported by task", "[gpu][vm]") {
  gputest::require_gpu();
  auto image = gputest::load(testing::toy_program(), false, 2);
  image->instructions_[4].op = 77;  // lm_head.t2
  auto gpu = make_gpu(*image);
  int tok = 1;
  REQUIRE(gpu->write_buffer(0, &tok, sizeof tok).is_ok());
  Status st = gpu->launch(0, {}, nullptr);
  INFO(st.message());
  REQUIRE(st.code() == StatusCode::DeviceError);
  CHECK_THAT(st.message(), Catch::Contains("task 4 (lm_head.t2)"));
  CHECK_THAT(st.message(), Catch::Contains("UNKNOWN_OPCODE"));
}

TEST_CASE("gpu vm: a stuck program times out within its deadline, naming the stuck task", "[gpu][vm][watchdog]") {
  gputest::require_gpu();
  ir::Program p = testing::toy_program();
  p.tasks.back().waits[0].threshold = 99;  // argmax waits for 99 of 4 tiles: never satisfiable
  auto image = gputest::load(p, /*skip_validation=*/true, 3);
  auto gpu = make_gpu(*image);
  int tok = 1;
  REQUIRE(gpu->write_buffer(0, &tok, sizeof tok).is_ok());
  vm::LaunchOptions lo;
  lo.deadline = std::chrono::milliseconds(200);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the executor stays usable after a timeout
    const auto t0 = std::chrono::steady_clock::now();
    Status st = gpu->launch(0, lo, nullptr);
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    INFO(st.message());
    REQUIRE(st.code() == StatusCode::Timeout);
    CHECK_THAT(st.message(), Catch::Contains("task 6 (argmax) SAMPLE_ARGMAX"));
    CHECK_THAT(st.message(), Catch::Contains("waits on counter 2 >= 99 (has 4)"));
    CHECK(ms < 2000.0);
  }
  // A good program in the same process (same context) runs and is right.
  auto good = gputest::load(testing::toy_program(), false, 3);
  auto gpu2 = make_gpu(*good);
  auto g = gputest::run_image_step(*gpu2, *good, 3, 0);
  INFO(g.status().message());
  REQUIRE(g.is_ok());
  CHECK(g->next_token >= 0);
  CHECK(g->next_token < testing::kToyVocab);
}

TEST_CASE("gpu vm: reset_state zeroes state and the program still runs", "[gpu][vm]") {
  gputest::require_gpu();
  auto image = gputest::load(testing::toy_program(), false, 2);
  auto gpu = make_gpu(*image);
  auto a = gputest::run_image_step(*gpu, *image, 5, 0);
  REQUIRE(a.is_ok());
  REQUIRE(gpu->reset_state().is_ok());
  float logits[testing::kToyVocab];
  REQUIRE(gpu->read_buffer(6, logits, sizeof logits).is_ok());
  for (float f : logits) CHECK(f == 0.0f);
  auto b = gputest::run_image_step(*gpu, *image, 5, 0);
  REQUIRE(b.is_ok());
  for (int n = 0; n < testing::kToyVocab; ++n) CHECK(b->logits[n] == a->logits[n]);
}

TEST_CASE("gpu vm: more workers than can be co-resident is refused, not launched", "[gpu][vm]") {
  gputest::require_gpu();
  auto image = gputest::load(testing::toy_program(), false, 60000);
  auto ex = vm::make_cuda_executor(*image);
  REQUIRE_FALSE(ex.is_ok());
  CHECK(ex.status().code() == StatusCode::Unsupported);
  CHECK_THAT(ex.status().message(), Catch::Contains("co-resident"));
}
#endif  // AMK_GPU_TESTS
