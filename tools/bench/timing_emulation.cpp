// tools/bench/timing_emulation.cpp: see timing_emulation.h.
#include "tools/bench/timing_emulation.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include "ir/enums.h"
#include "ir/opspec.h"

namespace amk::bench {
namespace {

bool is_attention(const ir::Task& t) {
  if (t.op == ir::Opcode::AttentionTile || t.op == ir::Opcode::AttentionCombine) return true;
  if (t.op != ir::Opcode::Fused) return false;
  const std::optional<std::string> name = t.params.get_string("recipe");
  const ir::RecipeSpec* r = name ? ir::recipe_find(*name) : nullptr;
  return r != nullptr && r->recipe == ir::FusedRecipe::RopeAttention;
}

}  // namespace

Status emulate_without_attention(ir::Program& program, int* removed) {
  *removed = 0;
  // Refused before anything is touched: the rewrite below moves the tasks out as it goes.
  if (std::none_of(program.tasks.begin(), program.tasks.end(), is_attention))
    return Status(StatusCode::InvalidArgument, "timing emulation: the program has no attention task");
  // Per counter: how many of its producers go, and the waits that stand for them (their own
  // waits, resolved in turn: split-KV partials -> combines -> o_proj; the highest threshold per
  // counter). Producers come before their consumers in task order, so one pass resolves all.
  std::unordered_map<int32_t, int64_t> gone;
  std::unordered_map<int32_t, std::map<int32_t, int64_t>> stands_for;
  const auto resolve = [&](const std::vector<ir::Wait>& waits) {
    std::map<int32_t, int64_t> out;
    const auto need = [&out](int32_t c, int64_t th) {
      int64_t& have = out[c];
      have = std::max(have, th);
    };
    for (const ir::Wait& w : waits) {
      auto it = stands_for.find(w.counter.value);
      if (it == stands_for.end()) {
        need(w.counter.value, w.threshold);
        continue;
      }
      for (const auto& [c, th] : it->second) need(c, th);
      // A counter the attention tasks shared with others (the appends after split-KV partials):
      // what the others add is still waited for.
      const int64_t rest = w.threshold - gone[w.counter.value];
      if (rest > 0) need(w.counter.value, rest);
    }
    return out;
  };
  std::vector<ir::Task> kept;
  for (ir::Task& t : program.tasks) {
    if (is_attention(t)) {
      if (t.out_counter.value >= 0) {
        std::map<int32_t, int64_t>& s = stands_for[t.out_counter.value];
        for (const auto& [c, th] : resolve(t.waits)) s[c] = std::max(s[c], th);
        ++gone[t.out_counter.value];
      }
      ++*removed;
      continue;
    }
    std::vector<ir::Wait> waits;
    for (const auto& [c, th] : resolve(t.waits)) waits.push_back(ir::Wait{ir::CounterId(c), th});
    t.waits = std::move(waits);
    t.id = ir::TaskId(static_cast<int32_t>(kept.size()));
    kept.push_back(std::move(t));
  }
  program.tasks = std::move(kept);
  // Page sharing was planned over the old task order; every activation gets its own bytes.
  program.pages.reset();
  // What only the removed tasks wrote (the attention output, split-KV partials) is now read
  // unwritten, which the validator rightly refuses: such a buffer becomes a CONST of random bytes
  // (amk-bench loads random weights; its weight bytes count WEIGHT buffers alone).
  std::vector<bool> written(program.buffers.size(), false);
  for (const ir::Task& t : program.tasks)
    for (ir::BufferId b : t.outputs) written[static_cast<size_t>(b.value)] = true;
  for (ir::Buffer& b : program.buffers)
    if (ir::buffer_kind_is_transient(b.kind) && !written[static_cast<size_t>(b.id.value)]) {
      b.kind = ir::BufferKind::Const;
      b.source = "emulation." + b.name;
    }
  return Status::ok();
}

Status apply_env_timing_emulation(ir::Program& program, std::string* what) {
  what->clear();
  const char* env = std::getenv("AMK_EMU_NO_ATTENTION");
  if (env == nullptr || std::strcmp(env, "1") != 0) return Status::ok();
  int removed = 0;
  Status s = emulate_without_attention(program, &removed);
  if (!s) return s;
  *what = "AMK_EMU_NO_ATTENTION=1: " + std::to_string(removed) +
          " attention tasks removed (a timing emulation: wrong results, no baseline check)";
  return Status::ok();
}

}  // namespace amk::bench
