// tests/loader/queues_test.cpp: per-worker queues are valid execution orders for any worker count.
// For W = 1, 2, 3 and more than the SM count: every task is queued once, tasks of SM s run on
// worker s % W, each queue follows simulate_counters() order, and running the queues completes
// every task (no deadlock), also on a random 200-task DAG whose task list is not topological.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "ir/graph.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

/// Every structural property of the queues of `img` for `program`.
void check_queues(const ir::Program& program, const ProgramImage& img, int expect_workers) {
  const amk_program_t& v = img.view();
  REQUIRE(v.n_sms == expect_workers);
  REQUIRE(v.sm_queue_offsets[0] == 0);
  REQUIRE(v.sm_queue_offsets[v.n_sms] == v.n_instructions);
  const ir::CounterSimulation sim = ir::simulate_counters(program);
  REQUIRE(sim.stuck.empty());
  std::vector<int64_t> rank(program.tasks.size(), -1);
  for (size_t i = 0; i < sim.order.size(); ++i) rank[sim.order[i].value] = static_cast<int64_t>(i);
  // The order itself: each task's waits are met by tasks earlier in it.
  std::vector<uint32_t> signals(program.counters.size(), 0);
  for (ir::TaskId id : sim.order) {
    const ir::Task& t = program.tasks[id.value];
    for (const ir::Wait& w : t.waits) CHECK(signals[w.counter.value] >= w.threshold);
    ++signals[t.out_counter.value];
  }
  std::vector<int> seen(program.tasks.size(), 0);
  for (int w = 0; w < v.n_sms; ++w) {
    for (int32_t k = v.sm_queue_offsets[w]; k < v.sm_queue_offsets[w + 1]; ++k) {
      const int32_t id = v.sm_queue[k];
      ++seen[id];
      CHECK(v.instructions[id].sm == w);
      const ir::Task& t = program.tasks[id];
      if (t.sm) CHECK(*t.sm % expect_workers == w);
      if (k > v.sm_queue_offsets[w]) CHECK(rank[v.sm_queue[k - 1]] < rank[id]);
    }
  }
  for (int s : seen) CHECK(s == 1);
  CHECK(run_queues(v) == v.n_instructions);
}

/// A random DAG of NOP tasks over `sms` SMs. Each task waits on up to 3 earlier tasks (in a hidden
/// topological order); the task list is SM by SM, highest SM first, so it is not topological,
/// although each SM's own queue is.
ir::Program random_dag(int n, int sms, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> sm_of(n);
  std::vector<std::vector<int>> deps(n);
  for (int i = 0; i < n; ++i) {
    sm_of[i] = static_cast<int>(rng() % sms);
    const int k = i == 0 ? 0 : static_cast<int>(rng() % 4);
    for (int j = 0; j < k; ++j) {
      const int d = static_cast<int>(rng() % i);
      if (std::find(deps[i].begin(), deps[i].end(), d) == deps[i].end()) deps[i].push_back(d);
    }
  }
  std::vector<int> list;  // topological index -> list position
  for (int s = sms - 1; s >= 0; --s)
    for (int i = 0; i < n; ++i)
      if (sm_of[i] == s) list.push_back(i);
  std::vector<int> id_of(n);
  for (int pos = 0; pos < n; ++pos) id_of[list[pos]] = pos;
  ir::Program p;
  for (int c = 0; c < n; ++c) p.counters.push_back(ir::Counter{ir::CounterId(c), 0, ""});
  for (int pos = 0; pos < n; ++pos) {
    const int i = list[pos];
    std::vector<std::pair<int32_t, int64_t>> waits;
    for (int d : deps[i]) waits.emplace_back(id_of[d], 1);  // counter c belongs to task c
    p.tasks.push_back(make_task(pos, ir::Opcode::Nop, {}, {}, pos, waits, sm_of[i], "t" + std::to_string(i)));
  }
  return p;
}

}  // namespace

TEST_CASE("queues: small program, W = 1, 2, 3 and more than the SM count", "[loader]") {
  const ir::Program p = small_program();
  for (int w : {0, 1, 2, 3, 5}) {
    INFO("workers = " << w);
    LoadOptions o;
    o.random_weights_seed = 1;
    o.workers = w;
    auto img = load_program(p, o);
    REQUIRE(img.is_ok());
    check_queues(p, **img, w == 0 ? 2 : w);
  }
}

TEST_CASE("queues: merging SMs in task-list order would deadlock; simulate order does not", "[loader]") {
  // The premise: small_program()'s task list is not a valid single-worker order.
  const ir::Program p = small_program();
  std::vector<uint32_t> counters(p.counters.size(), 0);
  bool blocked = false;
  for (const ir::Task& t : p.tasks) {
    for (const ir::Wait& wt : t.waits) blocked = blocked || counters[wt.counter.value] < wt.threshold;
    ++counters[t.out_counter.value];
  }
  CHECK(blocked);
  LoadOptions o;
  o.random_weights_seed = 1;
  o.workers = 1;
  auto img = load_program(p, o);
  REQUIRE(img.is_ok());
  CHECK(run_queues((*img)->view()) == 7);
}

TEST_CASE("queues: unassigned tasks go round-robin and still complete", "[loader]") {
  ir::Program p = small_program(/*paged=*/false);
  for (ir::Task& t : p.tasks) t.sm.reset();
  for (int w : {0, 1, 3}) {
    INFO("workers = " << w);
    LoadOptions o;
    o.random_weights_seed = 1;
    o.workers = w;
    auto img = load_program(p, o);
    REQUIRE(img.is_ok());
    check_queues(p, **img, w == 0 ? 1 : w);
  }
}

TEST_CASE("queues: a random 200-task DAG over 8 SMs, any worker count", "[loader]") {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const ir::Program p = random_dag(200, 8, seed);
    for (int w : {0, 1, 2, 3, 8, 13}) {
      INFO("seed " << seed << ", workers = " << w);
      LoadOptions o;
      o.workers = w;
      auto img = load_program(p, o);
      REQUIRE(img.is_ok());
      check_queues(p, **img, w == 0 ? 8 : w);
    }
  }
}

TEST_CASE("queues: a bad worker count is refused", "[loader]") {
  LoadOptions o;
  o.random_weights_seed = 1;
  o.workers = -1;
  auto img = load_program(small_program(), o);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::InvalidArgument);
  CHECK_THAT(img.status().message(), Contains("workers = -1"));
}
