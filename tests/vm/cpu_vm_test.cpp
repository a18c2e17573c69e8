// tests/vm/cpu_vm_test.cpp: the CPU VM runs the counter protocol correctly with any worker
// count, reports device errors and timeouts by task, and stays usable afterwards.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>

#include "loader/loader.h"
#include "toy_program.h"
#include "vm/cpu_vm.h"

using namespace amk;

namespace {

std::unique_ptr<loader::ProgramImage> load_toy(int workers, const ir::Program& p = testing::toy_program(),
                                               bool skip_validation = false) {
  loader::LoadOptions o;
  o.random_weights_seed = 7;
  o.workers = workers;
  o.unsafe_skip_validation_for_tests = skip_validation;
  auto image = loader::load_program(p, o);
  INFO(image.status().message());
  REQUIRE(image.is_ok());
  return std::move(*image);
}

/// Every unmet wait parks its worker at once, so each hand-off goes through the wake protocol.
vm::CpuVmOptions park_at_once() {
  vm::CpuVmOptions o;
  o.spin_before_park = std::chrono::nanoseconds(0);
  return o;
}

const float* weights(const loader::ProgramImage& image, const char* name) {
  return static_cast<const float*>(image.view().buffers[image.buffer_index(name)].ptr);
}

}  // namespace

TEST_CASE("cpu vm: toy program matches an fp64 reference with 1, 2, 3 and 5 workers", "[vm]") {
  for (int workers : {1, 2, 3, 5}) {
    auto image = load_toy(workers);
    REQUIRE(image->workers() == workers);
    auto vm = vm::make_cpu_executor(*image);
    for (int tok : {0, 3, 15}) {
      REQUIRE(vm->write_buffer(0, &tok, sizeof tok).is_ok());
      vm::LaunchStats stats;
      Status st = vm->launch(0, {}, &stats);
      INFO(st.message());
      REQUIRE(st.is_ok());
      float logits[testing::kToyVocab];
      int32_t next = -1;
      REQUIRE(vm->read_buffer(6, logits, sizeof logits).is_ok());
      REQUIRE(vm->read_buffer(7, &next, sizeof next).is_ok());
      auto ref = testing::toy_reference_logits(tok, weights(*image, "table"), weights(*image, "norm_w"),
                                               weights(*image, "W"));
      int best = 0;
      for (int n = 0; n < testing::kToyVocab; ++n) {
        CHECK(logits[n] == Approx(ref[n]).epsilon(1e-5).margin(1e-6));
        if (ref[n] > ref[best]) best = n;
      }
      CHECK(next == best);
    }
  }
}

TEST_CASE("cpu vm: thousands of launches keep the epoch counters consistent", "[vm]") {
  auto image = load_toy(2);
  auto vm = vm::make_cpu_executor(*image);
  int tok = 5;
  REQUIRE(vm->write_buffer(0, &tok, sizeof tok).is_ok());
  REQUIRE(vm->launch(0, {}, nullptr).is_ok());
  float first[testing::kToyVocab];
  REQUIRE(vm->read_buffer(6, first, sizeof first).is_ok());
  for (int i = 0; i < 3000; ++i) {
    Status st = vm->launch(i, {}, nullptr);
    REQUIRE(st.is_ok());
  }
  float last[testing::kToyVocab];
  REQUIRE(vm->read_buffer(6, last, sizeof last).is_ok());
  for (int n = 0; n < testing::kToyVocab; ++n) CHECK(last[n] == first[n]);
}

TEST_CASE("cpu vm: workers that park at once meet every hand-off over thousands of launches", "[vm]") {
  // A lost wakeup leaves a worker parked until the deadline: a Timeout here.
  for (int workers : {2, 5}) {
    auto image = load_toy(workers);
    auto vm = vm::make_cpu_executor(*image, park_at_once());
    int tok = 5;
    REQUIRE(vm->write_buffer(0, &tok, sizeof tok).is_ok());
    vm::LaunchOptions lo;
    lo.deadline = std::chrono::milliseconds(10000);
    vm::LaunchStats stats;
    REQUIRE(vm->launch(0, lo, &stats).is_ok());
    float first[testing::kToyVocab];
    REQUIRE(vm->read_buffer(6, first, sizeof first).is_ok());
    int64_t parked = 0;
    for (int i = 1; i < 2000; ++i) {
      Status st = vm->launch(i, lo, &stats);
      INFO("launch " << i << " with " << workers << " workers: " << st.message());
      REQUIRE(st.is_ok());
      REQUIRE(stats.parked_waits >= 0);
      parked += stats.parked_waits;
    }
    CHECK(parked > 0);  // the parking path ran, not only the fast check
    float last[testing::kToyVocab];
    REQUIRE(vm->read_buffer(6, last, sizeof last).is_ok());
    for (int n = 0; n < testing::kToyVocab; ++n) CHECK(last[n] == first[n]);
  }
}

TEST_CASE("cpu vm: a device error wakes parked workers at once instead of waiting for the deadline", "[vm]") {
  auto image = load_toy(3);
  auto vm = vm::make_cpu_executor(*image, park_at_once());
  int bad = testing::kToyVocab + 3;  // embed (task 0) fails; its consumers are parked on it
  REQUIRE(vm->write_buffer(0, &bad, sizeof bad).is_ok());
  vm::LaunchOptions lo;
  lo.deadline = std::chrono::milliseconds(20000);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = vm->launch(0, lo, nullptr);
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(st.code() == StatusCode::DeviceError);  // not Timeout: nobody stayed parked
  CHECK_THAT(st.message(), Catch::Contains("task 0 (embed) EMBED"));
  CHECK(ms < 10000.0);
  int good = 2;
  REQUIRE(vm->write_buffer(0, &good, sizeof good).is_ok());
  CHECK(vm->launch(1, lo, nullptr).is_ok());
}

TEST_CASE("cpu vm: a device error names the task and the next launch works", "[vm]") {
  auto image = load_toy(2);
  auto vm = vm::make_cpu_executor(*image);
  int bad = testing::kToyVocab + 3;
  REQUIRE(vm->write_buffer(0, &bad, sizeof bad).is_ok());
  Status st = vm->launch(0, {}, nullptr);
  REQUIRE(st.code() == StatusCode::DeviceError);
  CHECK_THAT(st.message(), Catch::Contains("task 0 (embed) EMBED"));
  int good = 2;
  REQUIRE(vm->write_buffer(0, &good, sizeof good).is_ok());
  CHECK(vm->launch(1, {}, nullptr).is_ok());
}

TEST_CASE("cpu vm: a stuck program times out within its deadline, naming the stuck task", "[vm]") {
  ir::Program p = testing::toy_program();
  p.tasks.back().waits[0].threshold = 99;  // argmax waits for 99 of 4 tiles: never satisfiable
  auto image = load_toy(3, p, /*skip_validation=*/true);
  auto vm = vm::make_cpu_executor(*image);
  int tok = 1;
  REQUIRE(vm->write_buffer(0, &tok, sizeof tok).is_ok());
  vm::LaunchOptions lo;
  lo.deadline = std::chrono::milliseconds(150);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the executor stays usable after a timeout
    const auto t0 = std::chrono::steady_clock::now();
    Status st = vm->launch(0, lo, nullptr);
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(st.code() == StatusCode::Timeout);
    CHECK_THAT(st.message(), Catch::Contains("task 6 (argmax) SAMPLE_ARGMAX"));
    CHECK_THAT(st.message(), Catch::Contains("waits on counter 2 >= 99 (has 4)"));
    CHECK(ms < 2000.0);
  }
  // A good program in the same process runs.
  auto good = load_toy(3);
  auto vm2 = vm::make_cpu_executor(*good);
  REQUIRE(vm2->write_buffer(0, &tok, sizeof tok).is_ok());
  CHECK(vm2->launch(0, {}, nullptr).is_ok());
}

TEST_CASE("cpu vm: a deadlock cycle times out at its deadline, names every blocked worker, and the process goes on",
          "[vm]") {
  // embed (worker 0) waits for norm's counter and norm (worker 1) waits for embed's: nothing can
  // start, so every task of the program is unfinished and each worker's queue head is blocked.
  ir::Program p = testing::toy_program();
  p.tasks[0].waits.push_back(ir::Wait{ir::CounterId(1), 1});
  auto image = load_toy(3, p, /*skip_validation=*/true);
  auto vm = vm::make_cpu_executor(*image);
  int tok = 1;
  REQUIRE(vm->write_buffer(0, &tok, sizeof tok).is_ok());
  vm::LaunchOptions lo;
  lo.deadline = std::chrono::milliseconds(200);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = vm->launch(0, lo, nullptr);
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(st.code() == StatusCode::Timeout);
  INFO(st.message());
  CHECK_THAT(st.message(), Catch::Contains("200 ms deadline"));
  CHECK_THAT(st.message(), Catch::Contains("7 task(s) never ran"));
  CHECK_THAT(st.message(), Catch::Contains("task 0 (embed) EMBED on worker 0 waits on counter 1 >= 1 (has 0)"));
  CHECK_THAT(st.message(), Catch::Contains("task 1 (norm) RMSNORM on worker 1 waits on counter 0 >= 1 (has 0)"));
  CHECK(ms >= 200.0);         // the watchdog does not fire early
  CHECK(ms < 200.0 + 1500.0);  // and the stuck workers let go promptly once it does
  // The next launch in the same process, on a valid image, runs and gives the reference token.
  auto good = load_toy(3);
  auto vm2 = vm::make_cpu_executor(*good);
  REQUIRE(vm2->write_buffer(0, &tok, sizeof tok).is_ok());
  REQUIRE(vm2->launch(0, lo, nullptr).is_ok());
  int32_t next = -1;
  REQUIRE(vm2->read_buffer(7, &next, sizeof next).is_ok());
  auto ref = testing::toy_reference_logits(tok, weights(*good, "table"), weights(*good, "norm_w"), weights(*good, "W"));
  int best = 0;
  for (int n = 1; n < testing::kToyVocab; ++n)
    if (ref[n] > ref[best]) best = n;
  CHECK(next == best);
}

TEST_CASE("cpu vm: the loader refuses a program validate() rejects", "[vm]") {
  ir::Program p = testing::toy_program();
  p.tasks.back().waits[0].threshold = 99;
  loader::LoadOptions o;
  o.random_weights_seed = 1;
  auto image = loader::load_program(p, o);
  REQUIRE_FALSE(image.is_ok());
  CHECK(image.status().code() == StatusCode::ValidationFailed);
  CHECK_THAT(image.status().message(), Catch::Contains("wait.unsatisfiable"));
}
