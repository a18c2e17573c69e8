// tests/ir/validate_fuzz_test.cpp: validate() and the graph helpers on corrupted programs: random
// ids, dangling references, absurd shapes, thresholds, params and page bindings. Nothing may
// crash or throw; every corrupted program gets a verdict consistent with its diagnostics.
#include <catch2/catch.hpp>

#include <limits>
#include <random>

#include "ir/graph.h"
#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::ProgramBuilder;

namespace {

Program seed_program() {
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8}), h = b.act("h", {1, 8}), g = b.act("g", {1, 8});
  const int kc = b.kv("kc", {4, 8}), y = b.output("y", {1, 8}), spare = b.act("spare", {1, 8});
  const int c0 = b.counter("c0"), c1 = b.counter("c1"), c2 = b.counter("c2");
  b.copy("load", x, h).signal(c0).sm(0);
  for (int i = 0; i < 2; ++i) b.gemv("t" + std::to_string(i), h, w, g, 8, 4 * i, 4).signal(c1).wait(c0, 1).sm(i);
  b.task(Opcode::KvAppend, "kv").in({g, kc}).out({kc}).i("pos", 1).wait(c1, 2).signal(c2);
  b.task(Opcode::Fused, "res").in({g, w, h}).out({h}).tile(8, 0, 8).param("recipe", std::string("GEMV_ADD")).wait(c1, 2)
      .signal(c2);
  b.copy("store", h, y).wait(c2, 2);
  b.page({g, spare}, 32);
  return b.build();
}

void corrupt(Program& p, std::mt19937_64& rng) {
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  const int64_t wild[] = {-1, 0, 1, 2, 7, 1000, std::numeric_limits<int32_t>::max(), int64_t{1} << 40,
                          std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  auto any = [&] { return wild[pick(10)]; };
  auto id = [&] { return static_cast<int32_t>(pick(4) == 0 ? any() : pick(12) - 2); };
  Task& t = p.tasks[pick(static_cast<int64_t>(p.tasks.size()))];
  Buffer& b = p.buffers[pick(static_cast<int64_t>(p.buffers.size()))];
  switch (pick(16)) {
    case 0: t.id = TaskId(id()); break;
    case 1: b.id = BufferId(id()); break;
    case 2: p.counters[pick(3)].id = CounterId(id()); break;
    case 3: if (!t.inputs.empty()) t.inputs[pick(static_cast<int64_t>(t.inputs.size()))] = BufferId(id()); break;
    case 4: t.outputs.push_back(BufferId(id())); break;
    case 5: t.out_counter = CounterId(id()); break;
    case 6: t.waits.push_back(Wait{CounterId(id()), any()}); break;
    case 7: b.shape[pick(static_cast<int64_t>(b.shape.size()))] = any(); break;
    case 8: b.shape.assign(static_cast<size_t>(pick(7)), 3); break;
    case 9: t.params.set("n_off", any()); break;
    case 10: t.params.set(pick(2) ? "N_tile" : "K", pick(2) ? ParamValue(1.5) : ParamValue(std::string("x"))); break;
    case 11: t.sm = static_cast<int32_t>(any()); break;
    case 12: t.op = static_cast<Opcode>(pick(kOpcodeCount)); break;
    case 13: p.pages->buffer_to_page.emplace_back(BufferId(id()), PageId(id())); break;
    case 14: p.pages->pages[0].nbytes = any(); break;
    default: b.dtype = static_cast<DType>(pick(kDTypeCount)); break;
  }
}

}  // namespace

TEST_CASE("validate survives corrupted programs and the graph helpers do too", "[ir]") {
  std::mt19937_64 rng(99);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    Program p = seed_program();
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) corrupt(p, rng);
    const ValidationResult r = validate(p);
    INFO("program " << i << "\n" << r.report());
    CHECK(r.ok == r.errors.empty());
    for (const Diagnostic& d : r.errors) CHECK(d.rule != "internal");
    rejected += r.ok ? 0 : 1;
    (void)dependency_edges(p);
    (void)topological_order(p);
    (void)simulate_counters(p);
    (void)simulate_adversarial(p, 2);
  }
  CHECK(rejected > 2000);
  CHECK(validate(seed_program()).ok);
}
