// tests/vm/trace_test.cpp: the CPU VM's traces (vm/trace.h) and their Chrome trace export: one
// track per worker, one run slice per task per launch with its label and opcode, wait slices that
// end before their run slice begins, and every task's run starting after its producers' runs end.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/enums.h"
#include "ir/graph.h"
#include "loader/loader.h"
#include "toy_program.h"
#include "vm/cpu_vm.h"
#include "vm/trace_export.h"

using namespace amk;

namespace {

constexpr int kWorkers = 3;
constexpr int kLaunches = 3;

struct Traced {
  ir::Program program = testing::toy_program();
  std::vector<vm::LaunchTrace> launches;
};

Traced run_traced() {
  Traced t;
  loader::LoadOptions o;
  o.random_weights_seed = 3;
  o.workers = kWorkers;
  auto image = loader::load_program(t.program, o);
  REQUIRE(image.is_ok());
  auto executor = vm::make_cpu_executor(**image);
  REQUIRE(executor->supports_trace());
  t.launches.resize(kLaunches);
  for (int i = 0; i < kLaunches; ++i) {
    const int32_t tok = i;
    REQUIRE(executor->write_buffer(0, &tok, sizeof tok).is_ok());
    vm::LaunchOptions lo;
    lo.trace = &t.launches[static_cast<size_t>(i)];
    REQUIRE(executor->launch(i, lo, nullptr).is_ok());
  }
  return t;
}

/// The written trace file, parsed back.
nlohmann::json saved_trace(const Traced& t) {
  const std::string path = std::string(AMK_BINARY_DIR) + "/trace_test_toy.json";
  vm::TraceInfo info{"toy", "cpu", kWorkers};
  REQUIRE(vm::trace_save_chrome(path, t.program, t.launches, info).is_ok());
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  return doc;
}

struct Slice {
  int tid = -1;
  double begin = 0, end = 0;
};

}  // namespace

TEST_CASE("trace: records are complete, ordered per worker, and follow the queues", "[vm]") {
  const Traced t = run_traced();
  for (const vm::LaunchTrace& l : t.launches) {
    CHECK(l.clock == "steady_clock");
    REQUIRE(l.records.size() == t.program.tasks.size());
    std::map<int, uint64_t> last_end;  // per worker: tasks run one after another
    std::set<int> seen;
    for (const vm::TaskTiming& r : l.records) {
      INFO("task " << r.task << " worker " << r.worker);
      CHECK(seen.insert(r.task).second);
      CHECK(r.worker == *t.program.tasks[static_cast<size_t>(r.task)].sm % kWorkers);
      CHECK(r.t_wait_begin <= r.t_run_begin);
      CHECK(r.t_run_begin <= r.t_end);
      CHECK(r.t_end > 0);
      CHECK(r.t_wait_begin >= last_end[r.worker]);
      CHECK(r.t_wait_begin >= l.t_launch_begin);
      CHECK(r.t_end <= l.t_launch_end);
      last_end[r.worker] = r.t_end;
    }
  }
}

TEST_CASE("trace: the Chrome trace has worker tracks, labelled run slices and waits before runs", "[vm]") {
  const Traced t = run_traced();
  const nlohmann::json doc = saved_trace(t);
  REQUIRE(doc.at("traceEvents").is_array());
  CHECK(doc.at("otherData").at("launches") == kLaunches);

  std::map<int, std::string> thread_names;
  std::map<std::pair<int, int>, Slice> runs, waits;  // (step, task) -> slice
  std::map<std::pair<int, int>, int> run_count;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      thread_names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
      continue;
    }
    if (e.at("ph") != "X" || e.at("cat") == "launch") continue;
    const auto& a = e.at("args");
    const std::pair<int, int> key{a.at("step").get<int>(), a.at("task").get<int>()};
    const Slice s{e.at("tid").get<int>(), e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()};
    if (e.at("cat") == "wait") {
      CHECK(e.at("name") == "wait");
      waits[key] = s;
      continue;
    }
    const ir::Task& task = t.program.tasks[static_cast<size_t>(key.second)];
    const std::string opcode(ir::opcode_name(task.op));
    CHECK(e.at("cat") == opcode);
    CHECK(e.at("name") == task.label + " " + opcode);
    CHECK(a.at("opcode") == opcode);
    CHECK(a.at("label") == task.label);
    CHECK(a.at("sm") == s.tid);
    CHECK(a.at("waits").size() == task.waits.size());
    runs[key] = s;
    ++run_count[key];
  }

  for (int w = 0; w < kWorkers; ++w) CHECK(thread_names[w] == "worker " + std::to_string(w));
  CHECK(thread_names.size() == kWorkers + 1);  // plus the "launches" track

  constexpr double kEps = 1e-6;  // us; ts and dur are exact ns / 1000
  for (int step = 0; step < kLaunches; ++step) {
    for (size_t i = 0; i < t.program.tasks.size(); ++i) {
      const std::pair<int, int> key{step, static_cast<int>(i)};
      INFO("step " << step << " task " << i);
      REQUIRE(run_count[key] == 1);
      if (t.program.tasks[i].waits.empty()) {
        CHECK(waits.count(key) == 0);
        continue;
      }
      REQUIRE(waits.count(key) == 1);
      CHECK(waits[key].tid == runs[key].tid);
      CHECK(waits[key].end <= runs[key].begin + kEps);
    }
    for (const auto& [producer, consumer] : ir::dependency_edges(t.program)) {
      INFO("step " << step << ": task " << producer.value << " -> task " << consumer.value);
      CHECK(runs[{step, consumer.value}].begin + kEps >= runs[{step, producer.value}].end);
    }
  }
}

TEST_CASE("trace: a launch without a trace leaves the caller's records alone", "[vm]") {
  ir::Program p = testing::toy_program();
  loader::LoadOptions o;
  o.random_weights_seed = 3;
  o.workers = 2;
  auto image = loader::load_program(p, o);
  REQUIRE(image.is_ok());
  auto executor = vm::make_cpu_executor(**image);
  vm::LaunchTrace traced;
  vm::LaunchOptions on;
  on.trace = &traced;
  REQUIRE(executor->launch(0, on, nullptr).is_ok());
  const auto before = traced.records.size();
  REQUIRE(executor->launch(1, {}, nullptr).is_ok());  // tracing off again
  CHECK(traced.records.size() == before);
  CHECK(traced.pos == 0);
}

TEST_CASE("trace: a launch's SM placement reaches its launch slice and every task slice, and only where known",
          "[vm]") {
  Traced t = run_traced();
  for (const vm::LaunchTrace& l : t.launches) CHECK(l.worker_sm.empty());  // the CPU VM has no SMs
  // A GPU launch's placement (LaunchTrace::worker_sm): worker w ran on SM 40 + 7w in step 1 only.
  t.launches[1].worker_sm = {40, 47, 54};
  const nlohmann::ordered_json doc = vm::trace_to_chrome_json(t.program, t.launches, vm::TraceInfo{"toy", "cuda", kWorkers});
  int tasks_with_sm = 0, launches_with_sm = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") == "wait") continue;
    const auto& a = e.at("args");
    const int step = a.at("step").get<int>();
    if (e.at("cat") == "launch") {
      CHECK(a.contains("worker_sm") == (step == 1));
      if (step == 1) {
        CHECK(a.at("worker_sm") == nlohmann::ordered_json({40, 47, 54}));
        ++launches_with_sm;
      }
      continue;
    }
    INFO("step " << step << " task " << a.at("task"));
    REQUIRE(a.contains("hw_sm") == (step == 1));
    if (step != 1) continue;
    CHECK(a.at("hw_sm").get<int>() == 40 + 7 * a.at("sm").get<int>());
    ++tasks_with_sm;
  }
  CHECK(launches_with_sm == 1);
  CHECK(tasks_with_sm == static_cast<int>(t.program.tasks.size()));
}
