// ir/validate_structure.cpp: the structural passes (ids, versions, buffer shapes, counters, task
// references and caps, SM ranges, waits, read-only writes, page bindings, GPU label).
// These run on any program, however broken; they only record whether the graph passes may run.
#include <string>

#include "ir/opspec.h"
#include "ir/validate_checks.h"

namespace amk::ir::detail {
namespace {

std::string s(int64_t v) { return std::to_string(v); }

// How an entry is named next to its position, before its id can be trusted.
std::string entity_name(const Task& t) { return " (" + (t.label.empty() ? std::string("<unlabelled>") : t.label) + ")"; }
std::string entity_name(const Buffer& b) { return " \"" + b.name + "\""; }
std::string entity_name(const Counter& c) { return c.note.empty() ? std::string() : " (\"" + c.note + "\")"; }
std::string entity_name(const Page&) { return std::string(); }

template <typename T>
void dense_ids(Context& cx, const std::vector<T>& items, const char* what) {
  const auto n = static_cast<int64_t>(items.size());
  std::vector<int32_t> first(items.size(), kNone);
  for (size_t i = 0; i < items.size(); ++i) {
    const int64_t id = items[i].id.value;
    const std::string at = std::string(what) + " at entry " + s(static_cast<int64_t>(i)) + entity_name(items[i]);
    if (id < 0 || id >= n) {
      cx.sink.error("ids.dense", at + " has id " + s(id) + ", outside 0.." + s(n - 1) + " (ids must be exactly 0..n-1)");
      cx.integrity_ok = false;
    } else if (first[static_cast<size_t>(id)] != kNone) {
      cx.sink.error("ids.dense", at + " repeats id " + s(id) + " (first used at entry " + s(first[static_cast<size_t>(id)]) + ")");
      cx.integrity_ok = false;
    } else {
      first[static_cast<size_t>(id)] = static_cast<int32_t>(i);
    }
  }
  for (int64_t id = 0; id < n; ++id) {
    if (first[static_cast<size_t>(id)] == kNone)
      cx.sink.error("ids.dense", std::string(what) + " id " + s(id) + " is missing (ids must be exactly 0.." + s(n - 1) + ")");
  }
}

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

}  // namespace

const RecipeSpec* task_recipe(const Task& task) {
  if (task.op != Opcode::Fused) return nullptr;
  const auto name = task.params.get_string("recipe");
  return name ? recipe_find(*name) : nullptr;
}

int task_outputs_expected(const Task& task) {
  const RecipeSpec* r = task_recipe(task);
  return r != nullptr ? r->outputs : op_spec(task.op).outputs;
}

void check_ids(Context& cx) {
  const Program& p = cx.program;
  dense_ids(cx, p.buffers, "buffer");
  dense_ids(cx, p.counters, "counter");
  dense_ids(cx, p.tasks, "task");
  if (p.pages) dense_ids(cx, p.pages->pages, "page");
}

void check_version(Context& cx) {
  const Program& p = cx.program;
  if (!p.ir_version.empty() && major_of(p.ir_version) != major_of(kIrVersion))
    cx.sink.error("version", "ir_version \"" + p.ir_version + "\" has a different major version than " + kIrVersion);
  if (!p.abi_version.empty() && major_of(p.abi_version) != major_of(kAbiVersion))
    cx.sink.error("version", "abi_version \"" + p.abi_version + "\" has a different major version than " + kAbiVersion);
}

void check_buffers(Context& cx) {
  const Program& p = cx.program;
  for (int32_t b = 0; b < static_cast<int32_t>(p.buffers.size()); ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.shape.size() > static_cast<size_t>(kMaxRank))
      cx.sink.error("caps", buffer_ref(p, b) + " has rank " + s(static_cast<int64_t>(buf.shape.size())) +
                                ", above the ABI maximum of " + s(kMaxRank), {}, {b});
    bool negative = false;
    for (size_t d = 0; d < buf.shape.size(); ++d) {
      if (buf.shape[d] < 0) {
        cx.sink.error("shape", buffer_ref(p, b) + " has negative dimension " + s(buf.shape[d]) + " at axis " +
                                   s(static_cast<int64_t>(d)), {}, {b});
        negative = true;
      }
    }
    if (!negative && buf.nbytes() < 0)
      cx.sink.error("shape", buffer_ref(p, b) + " is too large: its element or byte count overflows int64", {}, {b});
  }
}

void check_counters(Context& cx) {
  const Program& p = cx.program;
  for (int32_t c = 0; c < static_cast<int32_t>(p.counters.size()); ++c) {
    if (p.counters[c].init != 0)
      cx.sink.error("counter.init", counter_ref(p, c) + " has init " + s(p.counters[c].init) +
                                        "; counters start every launch at 0, so init must be 0", {}, {}, {c});
  }
}

void check_tasks(Context& cx) {
  const Program& p = cx.program;
  const ProgramIndex& ix = cx.ix;
  cx.task_refs_ok.assign(p.tasks.size(), 1);
  for (int32_t t = 0; t < ix.n_tasks; ++t) {
    const Task& task = p.tasks[t];
    auto who = [&] { return task_ref(p, t); };  // built only for a message
    const OpSpec& spec = op_spec(task.op);
    for (int pass = 0; pass < 2; ++pass) {
      const auto& list = pass == 0 ? task.inputs : task.outputs;
      for (size_t i = 0; i < list.size(); ++i) {
        const int32_t b = position_of(ix.buffer_of_id, list[i]);
        if (b == kNone) {
          cx.sink.error("ref.buffer", who() + ": " + (pass == 0 ? "input " : "output ") + s(static_cast<int64_t>(i)) +
                                          " refers to buffer " + s(list[i].value) + ", which does not exist", {t});
          cx.task_refs_ok[t] = 0;
          cx.integrity_ok = false;
        } else if (pass == 1 && buffer_kind_is_readonly(p.buffers[b].kind)) {
          cx.sink.error("write.readonly", who() + " writes " + buffer_ref(p, b) + " (" +
                                              std::string(buffer_kind_name(p.buffers[b].kind)) +
                                              "), which is read-only: no task may write it", {t}, {b});
        }
      }
    }
    const int32_t out_c = ix.task_out[t];
    if (out_c == kNone) {
      cx.sink.error("ref.counter", who() + " signals counter " + s(task.out_counter.value) + ", which does not exist", {t});
      cx.integrity_ok = false;
    }
    // Arity: the opcode's range, or a FUSED recipe's exact input and output counts.
    const auto n_in = static_cast<int64_t>(task.inputs.size());
    const auto n_out = static_cast<int64_t>(task.outputs.size());
    const RecipeSpec* recipe = task_recipe(task);
    if (n_in < spec.min_inputs || n_in > spec.max_inputs)
      cx.sink.error("arity", who() + ": " + std::string(spec.name) + " takes " + s(spec.min_inputs) +
                                 (spec.max_inputs != spec.min_inputs ? ".." + s(spec.max_inputs) : "") +
                                 " inputs, got " + s(n_in), {t});
    if (recipe == nullptr && n_out != spec.outputs)
      cx.sink.error("arity", who() + ": " + std::string(spec.name) + " has " + s(spec.outputs) + " output" +
                                 (spec.outputs == 1 ? "" : "s") + ", got " + s(n_out), {t});
    if (recipe != nullptr && n_in != recipe->inputs)
      cx.sink.error("arity", who() + ": FUSED recipe " + std::string(recipe->name) + " takes " + s(recipe->inputs) +
                                 " inputs, got " + s(n_in), {t});
    if (recipe != nullptr && n_out != recipe->outputs)
      cx.sink.error("arity", who() + ": FUSED recipe " + std::string(recipe->name) + " has " + s(recipe->outputs) +
                                 " output" + (recipe->outputs == 1 ? "" : "s") + ", got " + s(n_out), {t});
    if (n_in > kMaxInputs) cx.sink.error("caps", who() + " has " + s(n_in) + " inputs, above the ABI maximum of " + s(kMaxInputs), {t});
    if (n_out > kMaxOutputs) cx.sink.error("caps", who() + " has " + s(n_out) + " outputs, above the ABI maximum of " + s(kMaxOutputs), {t});
    const auto n_waits = static_cast<int64_t>(task.waits.size());
    if (n_waits > kMaxWaits) cx.sink.error("caps", who() + " has " + s(n_waits) + " waits, above the ABI maximum of " + s(kMaxWaits), {t});

    if (task.sm) {
      if (*task.sm < 0)
        cx.sink.error("sm.range", who() + " is assigned to sm " + s(*task.sm) + "; sm must be >= 0", {t});
      else if (p.target && *task.sm >= p.target->num_sms)
        cx.sink.error("sm.range", who() + " is assigned to sm " + s(*task.sm) + ", but target \"" + p.target->name +
                                      "\" has " + s(p.target->num_sms) + " SMs", {t});
    }
    for (int32_t k = ix.wait_begin[t]; k < ix.wait_begin[t + 1]; ++k) {
      const Wait& w = task.waits[static_cast<size_t>(k - ix.wait_begin[t])];
      const int32_t c = ix.wait_counter[k];
      if (c == kNone) {
        cx.sink.error("ref.counter", who() + " waits on counter " + s(w.counter.value) + ", which does not exist", {t});
        cx.integrity_ok = false;
        continue;
      }
      if (w.threshold < 1) {
        cx.sink.error("wait.threshold", who() + " waits on " + counter_ref(p, c) + " >= " + s(w.threshold) +
                                            "; a threshold must be at least 1", {t}, {}, {c});
      } else if (w.threshold > ix.producer_count(c)) {
        cx.sink.error("wait.unsatisfiable", who() + " waits on " + counter_ref(p, c) + " >= " + s(w.threshold) +
                                                ", but only " + s(ix.producer_count(c)) + " task" +
                                                (ix.producer_count(c) == 1 ? "" : "s") + " signal it", {t}, {}, {c});
      }
    }
  }
}

void check_pages(Context& cx) {
  const Program& p = cx.program;
  if (!p.pages) return;
  const ProgramIndex& ix = cx.ix;
  std::vector<int32_t> bound_to(p.buffers.size(), kNone);
  for (const auto& [bid, pid] : p.pages->buffer_to_page) {
    const int32_t b = position_of(ix.buffer_of_id, bid);
    const int32_t g = position_of(ix.page_of_id, pid);
    if (b == kNone) {
      cx.sink.error("ref.buffer", "pages bind buffer " + s(bid.value) + ", which does not exist");
      cx.integrity_ok = false;
    }
    if (g == kNone) {
      const std::string msg = "pages bind " + (b != kNone ? buffer_ref(p, b) : "buffer " + s(bid.value)) +
                              " to page " + s(pid.value) + ", which does not exist";
      if (b != kNone) cx.sink.error("ref.page", msg, {}, {b});
      else cx.sink.error("ref.page", msg);
      cx.integrity_ok = false;
    }
    if (b == kNone || g == kNone) continue;
    const Buffer& buf = p.buffers[b];
    const Page& page = p.pages->pages[g];
    if (bound_to[b] != kNone) {
      cx.sink.error("page.size", buffer_ref(p, b) + " is bound to a page twice (" + page_ref(p, bound_to[b]) +
                                     " and " + page_ref(p, g) + "); the first binding is analysed", {}, {b});
      continue;
    }
    bound_to[b] = g;
    if (buf.kind != BufferKind::Activation)
      cx.sink.error("page.bind", buffer_ref(p, b) + " is a " + std::string(buffer_kind_name(buf.kind)) +
                                     " buffer bound to " + page_ref(p, g) +
                                     "; only ACTIVATION buffers may share scratch pages (others must outlive the pass)", {}, {b});
    if (buf.nbytes() >= 0 && page.nbytes < buf.nbytes())
      cx.sink.error("page.size", buffer_ref(p, b) + " needs " + s(buf.nbytes()) + " bytes but " + page_ref(p, g) +
                                     " has " + s(page.nbytes), {}, {b});
  }
}

void check_meta(Context& cx) {
  const Program& p = cx.program;
  if (!p.target || !p.meta.is_object()) return;
  auto it = p.meta.find("gpu");
  if (it == p.meta.end() || !it->is_string()) return;
  const std::string gpu = it->get<std::string>();
  if (gpu != p.target->name)
    cx.sink.warning("target.label", "meta.gpu is \"" + gpu + "\" but target.name is \"" + p.target->name +
                                        "\" (results are filed under target.name)");
}

}  // namespace amk::ir::detail
