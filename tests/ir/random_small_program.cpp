// tests/ir/random_small_program.cpp: see random_small_program.h.
// Buffers: x (IO_INPUT [1,8]), W (WEIGHT [8,8]), 2-4 activations [1,8], sometimes a KV cache [2,8]
// with its new row, sometimes an IO_OUTPUT y [1,8] that tiles may cover only partly. Tasks: COPY,
// ADD (sometimes in place), GEMV tiles, in-place GEMV_ADD, KV_APPEND, ATTENTION_TILE, and with
// `accumulate` GEMV_ADD_COPY tiles and fold stages: 1-3 RMSNORM_MLP_FOLD tasks (norm_w [8],
// w_mlp [4, 3, 8]) on one counter, accumulating into one buffer and mostly waiting for its last
// writer, often followed by a reader of the sum waiting on that counter (all-join or partial). Counters are
// mostly private, sometimes shared; waits mostly follow list order (all-join or partial), sometimes
// point anywhere (cycles); some tasks get an SM (queue order); sometimes two activations share a page.
#include "random_small_program.h"

#include <algorithm>
#include <string>
#include <vector>

#include "program_builder.h"

namespace amk::testing {

ir::Program random_small_program(std::mt19937_64& rng, bool accumulate) {
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
  const int norm_w = accumulate ? b.weight("norm_w", {8}) : -1, w_mlp = accumulate ? b.weight("w_mlp", {4, 3, 8}) : -1;
  // Fold stages (accumulate only): per task, the buffer whose last writer it waits for (-1: none),
  // or for the reader of a stage, the stage's counter and the threshold it waits with.
  std::vector<int> join_writer_of, fixed_counter;
  std::vector<int64_t> fixed_threshold;
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
  auto fold = [&](int t, int dst, int counter) {  // intermediate columns [first, first + cols) of I = 4
    const int s0 = chance(0.7) ? x : src();
    const int64_t cols = 1 + pick(2), first = pick(static_cast<int>(5 - cols));
    auto r = b.task(Opcode::Fused, "t" + std::to_string(t)).in({s0, norm_w, w_mlp}).out({dst}).param("eps", 1e-5)
                 .tile(8, first, cols).i("flags", ir::kFlagAccumulate | int64_t{7} << ir::kFlagRecipeShift)
                 .param("recipe", std::string("RMSNORM_MLP_FOLD")).signal(counter);
    if (chance(0.2)) r.sm(pick(2));
  };
  auto fold_stage = [&](int first_task) {  // returns the number of tasks made
    const int dst = !written.empty() && chance(0.85) ? written[pick(static_cast<int>(written.size()))] : tile_dst();
    const int k = std::min(1 + pick(3), n_tasks - first_task);
    const int c = b.counter("c" + std::to_string(n_counters++));
    const bool join = chance(0.85);
    for (int i = 0; i < k; ++i) {
      fold(first_task + i, dst, c);
      join_writer_of.push_back(join ? dst : -1);
      fixed_counter.push_back(-1);
      fixed_threshold.push_back(0);
    }
    if (first_task + k >= n_tasks || !chance(0.6)) return k;
    const int out = act();
    b.copy("t" + std::to_string(first_task + k), dst, out).signal(b.counter("c" + std::to_string(n_counters++)));
    join_writer_of.push_back(-1);
    fixed_counter.push_back(c);
    fixed_threshold.push_back(chance(0.75) ? k : 1 + pick(k));
    return k + 1;
  };
  for (int t = 0; t < n_tasks; ++t) {
    const std::string label = "t" + std::to_string(t);
    if (accumulate && chance(0.35)) {
      t += fold_stage(t) - 1;
      continue;
    }
    if (accumulate) {
      join_writer_of.push_back(-1);
      fixed_counter.push_back(-1);
      fixed_threshold.push_back(0);
    }
    const int op = accumulate && chance(0.15) ? 8 : pick(kv ? 7 : 5);
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
        case 8: {  // GEMV_ADD in place, its tile also stored to a second buffer
          const int s0 = src(), h = tile_dst(), copy = acts[pick(n_act)];
          written.push_back(copy);
          return b.task(Opcode::Fused, label).in({s0, w, h}).out({h, copy}).tile(8, n_off, n_tile)
              .param("recipe", std::string("GEMV_ADD_COPY"));
        }
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
    if (accumulate && fixed_counter[t] >= 0) {  // the reader of a fold stage: its counter
      task.waits.push_back(ir::Wait{ir::CounterId(fixed_counter[t]), fixed_threshold[t]});
      continue;
    }
    if (accumulate && join_writer_of[t] >= 0) {  // a fold: an all-join on the last earlier writer of its output
      const int dst = join_writer_of[t];
      for (int u = t - 1; u >= 0; --u) {
        const ir::Task& prev = p.tasks[u];
        const bool writes = std::find(prev.outputs.begin(), prev.outputs.end(), ir::BufferId(dst)) != prev.outputs.end();
        if (!writes || prev.out_counter == task.out_counter) continue;  // the stage's own folds do not count
        add_wait(prev.out_counter.value, false);
        break;
      }
      if (chance(0.75)) continue;
    }
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
