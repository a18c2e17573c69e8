// tests/ir/validate_random_test.cpp: validate() against two dynamic judges on thousands of small
// random programs (seeded): an exhaustive explorer of every start/end interleaving (exact: it must
// agree with validate() both ways, which tests the "exact" claim of docs/VALIDATION.md) and the
// randomized simulate_adversarial (sound: a violation it finds means validate() rejected).
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "ir/access.h"
#include "ir/graph.h"
#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::ProgramBuilder;

namespace {

// Buffers: x (IO_INPUT [1,8]), W (WEIGHT [8,8]), 2-4 activations [1,8], sometimes a KV cache
// [2,8] with its new row; 2-6 tasks of COPY, ADD, GEMV tiles, in-place GEMV_ADD, KV_APPEND,
// ATTENTION_TILE. Counters are mostly private, sometimes shared; waits mostly follow list order
// (all-join or partial), sometimes point anywhere (cycles); some SMs; sometimes a shared page.
// Biased so that roughly half the programs are safe.
Program random_program(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8});
  std::vector<int> acts, written;
  const int n_act = 2 + pick(3);
  for (int i = 0; i < n_act; ++i) acts.push_back(b.act("a" + std::to_string(i), {1, 8}));
  const bool kv = chance(0.3);
  const int knew = kv ? b.input("k_new", {8}) : -1, kc = kv ? b.kv("k_cache", {2, 8}) : -1;
  const int n_tasks = 2 + pick(5);
  auto src = [&]() { return (written.empty() || pick(4) == 0) ? x : written[pick(static_cast<int>(written.size()))]; };
  auto act = [&]() {  // a whole-buffer write
    const int a = acts[pick(n_act)];
    written.push_back(a);
    return a;
  };
  auto tile_dst = [&]() { return pick(3) == 0 || written.empty() ? acts[pick(n_act)] : written[pick(static_cast<int>(written.size()))]; };
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
  Program p = b.build();
  std::vector<int> producers(n_counters, 0);
  for (const Task& t : p.tasks) ++producers[t.out_counter.value];
  for (int t = 0; t < n_tasks; ++t) {
    Task& task = p.tasks[t];
    // Mostly on counters of earlier tasks, counting only earlier producers (full or partial);
    // rarely on any counter with any satisfiable threshold (counter cycles, deadlocks).
    auto add_wait = [&](int c, bool anywhere) {
      int before = 0;
      for (int u = 0; u < t; ++u) before += p.tasks[u].out_counter.value == c ? 1 : 0;
      const int limit = anywhere ? producers[c] : before;
      if (limit > 0) task.waits.push_back(Wait{CounterId(c), chance(0.7) ? limit : 1 + pick(limit)});
    };
    for (int k = 0; k < 2 && t > 0; ++k)
      if (chance(k == 0 ? 0.8 : 0.4)) add_wait(p.tasks[pick(t)].out_counter.value, false);
    if (chance(0.08)) add_wait(pick(n_counters), true);
  }
  if (chance(0.35) && n_act >= 2) {
    const int a = pick(n_act);
    const int bb = (a + 1 + pick(n_act - 1)) % n_act;
    p.pages = PageAllocation{};
    p.pages->pages.push_back(Page{PageId(0), MemSpace::GlobalScratch, 32, -1, -1});
    p.pages->buffer_to_page = {{BufferId(acts[a]), PageId(0)}, {BufferId(acts[bb]), PageId(0)}};
  }
  return p;
}

// Every reachable state of the start/end machine (tasks not started, in flight, done; per memory
// element the buffers written so far and the last writer), checking each start like the
// adversary does. Exact for these sizes; returns the first violation found, or "".
class Explorer {
 public:
  explicit Explorer(const Program& p) : p_(p), n_(static_cast<int>(p.tasks.size())) {
    std::map<int, int> page_of;
    if (p.pages)
      for (auto [bid, pid] : p.pages->buffer_to_page) page_of[bid.value] = 1000 + pid.value;
    for (int t = 0; t < n_; ++t) {
      for (const Access& a : task_accesses(p, p.tasks[t])) {
        const Buffer& buf = p.buffers[a.buffer.value];
        if (buffer_kind_is_readonly(buf.kind)) continue;
        const int64_t cols = matrix_view(buf).cols;
        const int object = page_of.count(a.buffer.value) ? page_of[a.buffer.value] : a.buffer.value;
        for (int64_t r = a.region.row_begin; r < a.region.row_end; ++r)
          for (int64_t c = a.region.col_begin; c < a.region.col_end; ++c)
            acc_[t].push_back({location(object * 100 + static_cast<int>(r * cols + c)), a.buffer.value, a.write});
        if (buf.kind == BufferKind::KvCache && a.write) appenders_[a.buffer.value].insert(t);
      }
    }
  }
  std::string run() {
    State s;
    s.status.assign(n_, 0);
    s.last.assign(locations_.size(), -1);
    s.written.assign(locations_.size(), 0);
    return explore(s);
  }

 private:
  struct Acc { int loc, buffer; bool write; };
  struct State {
    std::vector<int> status, last, written;  // status: 0 new, 1 in flight, 2 done; written: buffer bitmask
    bool operator<(const State& o) const { return std::tie(status, last, written) < std::tie(o.status, o.last, o.written); }
  };
  int location(int key) { return locations_.emplace(key, static_cast<int>(locations_.size())).first->second; }
  bool ready(const State& s, int t) const {
    const Task& task = p_.tasks[t];
    if (s.status[t] != 0) return false;
    for (int u = t - 1; u >= 0 && task.sm; --u)
      if (p_.tasks[u].sm == task.sm) {
        if (s.status[u] != 2) return false;
        break;
      }
    for (const Wait& w : task.waits) {
      int64_t v = 0;
      for (int u = 0; u < n_; ++u) v += (s.status[u] == 2 && p_.tasks[u].out_counter == w.counter) ? 1 : 0;
      if (v < w.threshold) return false;
    }
    return true;
  }
  std::string check_start(const State& s, int t) const {
    for (const Acc& a : acc_.at(t)) {
      for (int u = 0; u < n_; ++u) {
        if (s.status[u] != 1 && u != t) continue;
        auto it = acc_.find(u);
        if (it == acc_.end()) continue;
        for (const Acc& b : it->second)
          if (b.loc == a.loc && (a.write || b.write) && (u != t || a.buffer != b.buffer)) return "overlap";
        if (u == t) break;
      }
      const BufferKind kind = p_.buffers[a.buffer].kind;
      if (!a.write && buffer_kind_is_transient(kind)) {
        if (!(s.written[a.loc] >> a.buffer & 1)) return "unwritten";
        if (s.last[a.loc] != a.buffer) return "clobber";
      }
      if (!a.write && kind == BufferKind::KvCache && appenders_.count(a.buffer) && !appenders_.at(a.buffer).count(t))
        for (int ap : appenders_.at(a.buffer))
          if (s.status[ap] != 2) return "kv";
    }
    return "";
  }
  std::string explore(const State& start) {
    std::vector<State> stack{start};
    std::set<State> seen{start};
    while (!stack.empty()) {
      State s = stack.back();
      stack.pop_back();
      bool moved = false;
      for (int t = 0; t < n_; ++t) {
        State nx = s;
        if (s.status[t] == 1) {
          nx.status[t] = 2;
          for (const Acc& a : acc_[t])
            if (a.write) {
              nx.last[a.loc] = a.buffer;
              nx.written[a.loc] |= 1 << a.buffer;
            }
        } else if (ready(s, t)) {
          if (std::string v = check_start(s, t); !v.empty()) return v + " at " + p_.tasks[t].label;
          nx.status[t] = 1;
        } else {
          continue;
        }
        moved = true;
        if (seen.insert(nx).second) stack.push_back(nx);
      }
      if (!moved)
        for (int t = 0; t < n_; ++t)
          if (s.status[t] != 2) return "deadlock";
    }
    return "";
  }

  const Program& p_;
  int n_;
  std::map<int, std::vector<Acc>> acc_;
  std::map<int, int> locations_;
  std::map<int, std::set<int>> appenders_;
};

bool dynamic_rule(const std::string& rule) {
  return rule.rfind("race.", 0) == 0 || rule == "page.clobber" || rule == "deadlock.cycle" || rule == "queue.order";
}

}  // namespace

TEST_CASE("validate agrees exactly with an exhaustive interleaving explorer on random programs", "[ir]") {
  std::mt19937_64 rng(20240611);
  int accepted = 0, rejected = 0;
  std::map<std::string, int> by_rule;
  for (int i = 0; i < 2500; ++i) {
    const Program p = random_program(rng);
    const ValidationResult r = validate(p);
    for (const Diagnostic& d : r.errors) {
      INFO("program " << i << "\n" << r.report());
      REQUIRE(dynamic_rule(d.rule));  // generated programs are structurally valid
      ++by_rule[d.rule];
    }
    const std::string violation = Explorer(p).run();
    INFO("program " << i << ": explorer says '" << violation << "'\n" << r.report());
    REQUIRE(r.ok == violation.empty());
    (r.ok ? accepted : rejected) += 1;
  }
  std::string rules;
  for (const auto& [rule, n] : by_rule) rules += " " + rule + "=" + std::to_string(n);
  WARN("exhaustive cross-check: " << accepted << " accepted, " << rejected << " rejected; errors:" << rules);
  CHECK(accepted > 300);
  CHECK(rejected > 300);
  for (const char* rule : {"race.raw", "race.war", "race.waw", "race.unwritten-read", "race.kv", "race.partial-wait",
                           "page.clobber", "deadlock.cycle", "queue.order"})
    CHECK(by_rule[rule] > 0);
}

TEST_CASE("validate against simulate_adversarial on random programs", "[ir]") {
  std::mt19937_64 rng(777);
  int accepted = 0, rejected = 0, caught = 0;
  for (int i = 0; i < 3000; ++i) {
    const Program p = random_program(rng);
    const ValidationResult r = validate(p);
    const std::vector<std::string> found = simulate_adversarial(p, 16);
    INFO("program " << i << ": " << (found.empty() ? std::string("no violation") : found[0]) << "\n" << r.report());
    if (r.ok) REQUIRE(found.empty());
    if (!found.empty()) REQUIRE_FALSE(r.ok);
    (r.ok ? accepted : rejected) += 1;
    caught += found.empty() ? 0 : 1;
  }
  WARN("adversarial cross-check: " << accepted << " accepted (no violation seen in any), " << rejected
                                    << " rejected, of which the adversary caught " << caught);
  CHECK(caught > rejected * 3 / 4);
}
