// tests/ir/random_small_program.cpp: see random_small_program.h.
// Buffers: x (IO_INPUT [1,8]), W (WEIGHT [8,8]), 2-4 activations [1,8], sometimes a KV cache [2,8]
// with its new row, sometimes an IO_OUTPUT y [1,8] that tiles may cover only partly. Tasks: COPY,
// ADD (sometimes in place), GEMV tiles, in-place GEMV_ADD, KV_APPEND, ATTENTION_TILE. Counters are
// mostly private, sometimes shared; waits mostly follow list order (all-join or partial), sometimes
// point anywhere (cycles); some tasks get an SM (queue order); sometimes two activations share a page.
#include "random_small_program.h"

#include <string>
#include <vector>

#include "program_builder.h"

namespace amk::testing {

ir::Program random_small_program(std::mt19937_64& rng) {
  using ir::Opcode;
  auto pick = [&](int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8});
  std::vector<int> acts, written;
  const int n_act = 2 + pick(3);
  for (int i = 0; i < n_act; ++i) acts.push_back(b.act("a" + std::to_string(i), {1, 8}));
  const bool kv = chance(0.3);
  const int knew = kv ? b.input("k_new", {8}) : -1, kc = kv ? b.kv("k_cache", {2, 8}) : -1;
  const int y = chance(0.3) ? b.output("y", {1, 8}) : -1;
  const int n_tasks = 2 + pick(5);
  auto src = [&]() { return (written.empty() || pick(4) == 0) ? x : written[pick(static_cast<int>(written.size()))]; };
  auto act = [&]() {  // a whole-buffer write; the output takes some of them
    const int a = (y >= 0 && pick(4) == 0) ? y : acts[pick(n_act)];
    written.push_back(a);
    return a;
  };
  auto tile_dst = [&]() {
    if (y >= 0 && pick(3) == 0) return y;
    return pick(3) == 0 || written.empty() ? acts[pick(n_act)] : written[pick(static_cast<int>(written.size()))];
  };
  int n_counters = 0;
  for (int t = 0; t < n_tasks; ++t) {
    const std::string label = "t" + std::to_string(t);
    const int op = pick(kv ? 7 : 5);
    const int64_t n_tile = pick(2) ? 2 : 4, n_off = 2 * pick(static_cast<int>((8 - n_tile) / 2 + 1));
    ProgramBuilder::TaskRef r = [&]() {
      switch (op) {
        case 0: case 4: {
          const int s0 = src();
          return b.copy(label, s0, act());
        }
        case 1: {
          const int a = src(), c = src();
          const bool in_place = chance(0.3);
          const int dst = in_place ? tile_dst() : act();
          return b.task(Opcode::Add, label).in({in_place ? dst : a, c}).out({dst});
        }
        case 2: {
          const int s0 = src();
          return b.gemv(label, s0, w, tile_dst(), 8, n_off, n_tile);
        }
        case 3: {
          const int s0 = src(), h = tile_dst();
          return b.task(Opcode::Fused, label).in({s0, w, h}).out({h}).tile(8, n_off, n_tile)
              .param("recipe", std::string("GEMV_ADD"));
        }
        case 5: return b.task(Opcode::KvAppend, label).in({knew, kc}).out({kc}).i("pos", pick(2));
        default: {
          const int q = src();
          return b.task(Opcode::AttentionTile, label).in({q, kc, kc}).out({act()}).i("head_dim", 4).i("kv_start", 0)
              .i("kv_len", 2).param("scale", 0.5).i("n_heads", 2).i("n_kv_heads", 2);
        }
      }
    }();
    // Private counters, or the previous task's (a join, like tiles of one stage).
    r.signal(n_counters == 0 || chance(0.65) ? b.counter("c" + std::to_string(n_counters++)) : n_counters - 1);
    if (chance(0.35)) r.sm(pick(2));
  }
  ir::Program p = b.build();
  std::vector<int> producers(n_counters, 0);
  for (const ir::Task& t : p.tasks) ++producers[t.out_counter.value];
  for (int t = 0; t < n_tasks; ++t) {
    ir::Task& task = p.tasks[t];
    // Mostly on counters of earlier tasks, counting only earlier producers (full or partial);
    // rarely on any counter with any satisfiable threshold (counter cycles, deadlocks).
    auto add_wait = [&](int c, bool anywhere) {
      int before = 0;
      for (int u = 0; u < t; ++u) before += p.tasks[u].out_counter.value == c ? 1 : 0;
      const int limit = anywhere ? producers[c] : before;
      if (limit > 0) task.waits.push_back(ir::Wait{ir::CounterId(c), chance(0.7) ? limit : 1 + pick(limit)});
    };
    for (int k = 0; k < 2 && t > 0; ++k)
      if (chance(k == 0 ? 0.8 : 0.4)) add_wait(p.tasks[pick(t)].out_counter.value, false);
    if (chance(0.08)) add_wait(pick(n_counters), true);
  }
  if (chance(0.35) && n_act >= 2) {
    const int a = pick(n_act);
    const int bb = (a + 1 + pick(n_act - 1)) % n_act;
    p.pages = ir::PageAllocation{};
    p.pages->pages.push_back(ir::Page{ir::PageId(0), ir::MemSpace::GlobalScratch, 32, -1, -1});
    p.pages->buffer_to_page = {{ir::BufferId(acts[a]), ir::PageId(0)}, {ir::BufferId(acts[bb]), ir::PageId(0)}};
  }
  return p;
}

}  // namespace amk::testing
