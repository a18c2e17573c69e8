// loader/check_structure.cpp: ids, references, caps and sizes the loader indexes by.
#include "loader/check_structure.h"

#include <limits>
#include <vector>

#include "loader/names.h"

namespace amk::loader {
namespace {

Status bad(std::string message) { return Status(StatusCode::InvalidArgument, std::move(message)); }

/// Ids must be exactly 0..n-1 (any order): the tables are indexed by id.
template <typename T, typename IdOf>
Status check_dense(const std::vector<T>& items, const char* what, IdOf id_of) {
  std::vector<bool> seen(items.size(), false);
  for (const T& item : items) {
    const int32_t id = id_of(item);
    if (id < 0 || static_cast<size_t>(id) >= items.size())
      return bad(std::string(what) + " id " + std::to_string(id) + " is outside 0.." +
                 std::to_string(static_cast<int64_t>(items.size()) - 1) + " (ids must be dense)");
    if (seen[id]) return bad(std::string(what) + " id " + std::to_string(id) + " appears twice");
    seen[id] = true;
  }
  return Status::ok();
}

Status check_buffer(const ir::Buffer& b) {
  if (static_cast<uint32_t>(b.dtype) >= static_cast<uint32_t>(ir::kDTypeCount) ||
      static_cast<uint32_t>(b.kind) >= static_cast<uint32_t>(ir::kBufferKindCount) ||
      static_cast<uint32_t>(b.space) >= static_cast<uint32_t>(ir::kMemSpaceCount))
    return bad(buffer_name(b) + ": dtype, kind or space code out of range");
  if (b.shape.size() > static_cast<size_t>(ir::kMaxRank))
    return bad(buffer_name(b) + ": rank " + std::to_string(b.shape.size()) + " exceeds " + std::to_string(ir::kMaxRank));
  for (int64_t d : b.shape)
    if (d < 0) return bad(buffer_name(b) + ": shape " + shape_text(b.shape) + " has a negative dimension");
  if (b.numel() < 0 || b.nbytes() < 0) return bad(buffer_name(b) + ": shape " + shape_text(b.shape) + " overflows");
  return Status::ok();
}

Status check_task(const ir::Task& t, size_t n_buffers, size_t n_counters) {
  auto in_range = [](int32_t v, size_t n) { return v >= 0 && static_cast<size_t>(v) < n; };
  if (static_cast<uint32_t>(t.op) >= static_cast<uint32_t>(ir::kOpcodeCount))
    return bad(task_name(t) + ": opcode code " + std::to_string(static_cast<int32_t>(t.op)) + " out of range");
  if (t.inputs.size() > static_cast<size_t>(ir::kMaxInputs) || t.outputs.size() > static_cast<size_t>(ir::kMaxOutputs) ||
      t.waits.size() > static_cast<size_t>(ir::kMaxWaits))
    return bad(task_name(t) + ": more than 8 inputs, 4 outputs or 8 waits");
  for (size_t i = 0; i < t.inputs.size(); ++i)
    if (!in_range(t.inputs[i].value, n_buffers))
      return bad(task_name(t) + ": input " + std::to_string(i) + " names buffer " + std::to_string(t.inputs[i].value) +
                 ", which does not exist");
  for (size_t i = 0; i < t.outputs.size(); ++i)
    if (!in_range(t.outputs[i].value, n_buffers))
      return bad(task_name(t) + ": output " + std::to_string(i) + " names buffer " +
                 std::to_string(t.outputs[i].value) + ", which does not exist");
  if (!in_range(t.out_counter.value, n_counters))
    return bad(task_name(t) + ": out_counter " + std::to_string(t.out_counter.value) + " does not exist");
  for (const ir::Wait& w : t.waits) {
    if (!in_range(w.counter.value, n_counters))
      return bad(task_name(t) + ": waits on counter " + std::to_string(w.counter.value) + ", which does not exist");
    if (w.threshold < 0 || w.threshold > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
      return bad(task_name(t) + ": wait threshold " + std::to_string(w.threshold) + " on counter " +
                 std::to_string(w.counter.value) + " does not fit a uint32 counter");
  }
  if (t.sm && *t.sm < 0) return bad(task_name(t) + ": sm " + std::to_string(*t.sm) + " is negative");
  return Status::ok();
}

Status check_pages(const ir::Program& p) {
  if (!p.pages) return Status::ok();
  if (Status s = check_dense(p.pages->pages, "page", [](const ir::Page& g) { return g.id.value; }); !s) return s;
  for (const ir::Page& g : p.pages->pages)
    if (g.nbytes < 0) return bad("page " + std::to_string(g.id.value) + ": nbytes " + std::to_string(g.nbytes) + " is negative");
  std::vector<bool> bound(p.buffers.size(), false);
  for (const auto& [b, g] : p.pages->buffer_to_page) {
    if (b.value < 0 || static_cast<size_t>(b.value) >= p.buffers.size())
      return bad("pages.buffer_to_page: buffer " + std::to_string(b.value) + " does not exist");
    if (g.value < 0 || static_cast<size_t>(g.value) >= p.pages->pages.size())
      return bad("pages.buffer_to_page: buffer " + std::to_string(b.value) + " is bound to page " +
                 std::to_string(g.value) + ", which does not exist");
    if (bound[b.value]) return bad("pages.buffer_to_page: buffer " + std::to_string(b.value) + " is bound twice");
    bound[b.value] = true;
  }
  return Status::ok();
}

}  // namespace

Status check_structure(const ir::Program& p) {
  constexpr size_t kMaxEntities = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  if (p.buffers.size() > kMaxEntities || p.counters.size() > kMaxEntities || p.tasks.size() > kMaxEntities)
    return bad("program has more than 2^31-1 buffers, counters or tasks");
  if (Status s = check_dense(p.buffers, "buffer", [](const ir::Buffer& b) { return b.id.value; }); !s) return s;
  if (Status s = check_dense(p.counters, "counter", [](const ir::Counter& c) { return c.id.value; }); !s) return s;
  if (Status s = check_dense(p.tasks, "task", [](const ir::Task& t) { return t.id.value; }); !s) return s;
  for (const ir::Buffer& b : p.buffers)
    if (Status s = check_buffer(b); !s) return s;
  for (const ir::Task& t : p.tasks)
    if (Status s = check_task(t, p.buffers.size(), p.counters.size()); !s) return s;
  return check_pages(p);
}

}  // namespace amk::loader
