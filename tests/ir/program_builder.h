// tests/ir/program_builder.h: a small fluent builder for hand-made test programs.
//   ProgramBuilder b;
//   int x = b.act("x", {1, 8}), y = b.act("y", {1, 8}), c = b.counter("x done");
//   b.task(Opcode::Copy, "copy").in({x}).out({y}).signal(c).wait(c0, 1).sm(0);
// Ids are dense and follow creation order; a task that never calls signal() gets a fresh counter
// of its own at build(). Nothing is checked here: validate() is what the tests exercise.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"
#include "ir/validate.h"

namespace amk::testing {

class ProgramBuilder {
 public:
  class TaskRef {
   public:
    TaskRef(ProgramBuilder& b, size_t i) : b_(b), i_(i) {}
    TaskRef& in(std::vector<int> ids) {
      for (int id : ids) t().inputs.push_back(ir::BufferId(id));
      return *this;
    }
    TaskRef& out(std::vector<int> ids) {
      for (int id : ids) t().outputs.push_back(ir::BufferId(id));
      return *this;
    }
    TaskRef& signal(int counter) {
      t().out_counter = ir::CounterId(counter);
      b_.signalled_[i_] = true;
      return *this;
    }
    TaskRef& wait(int counter, int64_t threshold) {
      t().waits.push_back(ir::Wait{ir::CounterId(counter), threshold});
      return *this;
    }
    TaskRef& sm(int32_t s) {
      t().sm = s;
      return *this;
    }
    TaskRef& param(const std::string& key, ir::ParamValue v) {
      t().params.set(key, std::move(v));
      return *this;
    }
    TaskRef& i(const std::string& key, int64_t v) { return param(key, v); }
    /// GEMV_TILE-style tile params: K, N_tile, n_off.
    TaskRef& tile(int64_t k, int64_t n_off, int64_t n_tile) { return i("K", k).i("N_tile", n_tile).i("n_off", n_off); }
    int id() const { return static_cast<int>(i_); }
    ir::Task& t() { return b_.p_.tasks[i_]; }

   private:
    ProgramBuilder& b_;
    size_t i_;
  };

  int buffer(const std::string& name, ir::BufferKind kind, std::vector<int64_t> shape, ir::DType dt = ir::DType::F32,
             ir::MemSpace space = ir::MemSpace::Hbm) {
    ir::Buffer b;
    b.id = ir::BufferId(static_cast<int32_t>(p_.buffers.size()));
    b.name = name;
    b.kind = kind;
    b.dtype = dt;
    b.shape = std::move(shape);
    b.space = space;
    if (kind == ir::BufferKind::Weight || kind == ir::BufferKind::Const) b.source = name;
    p_.buffers.push_back(b);
    return b.id.value;
  }
  int act(const std::string& name, std::vector<int64_t> shape, ir::DType dt = ir::DType::F32) {
    return buffer(name, ir::BufferKind::Activation, std::move(shape), dt);
  }
  int weight(const std::string& name, std::vector<int64_t> shape) {
    return buffer(name, ir::BufferKind::Weight, std::move(shape));
  }
  int input(const std::string& name, std::vector<int64_t> shape, ir::DType dt = ir::DType::F32) {
    return buffer(name, ir::BufferKind::IoInput, std::move(shape), dt);
  }
  int output(const std::string& name, std::vector<int64_t> shape, ir::DType dt = ir::DType::F32) {
    return buffer(name, ir::BufferKind::IoOutput, std::move(shape), dt);
  }
  int kv(const std::string& name, std::vector<int64_t> shape) {
    return buffer(name, ir::BufferKind::KvCache, std::move(shape));
  }
  int counter(const std::string& note = "") {
    p_.counters.push_back(ir::Counter{ir::CounterId(static_cast<int32_t>(p_.counters.size())), 0, note});
    return static_cast<int>(p_.counters.size()) - 1;
  }
  TaskRef task(ir::Opcode op, const std::string& label) {
    ir::Task t;
    t.id = ir::TaskId(static_cast<int32_t>(p_.tasks.size()));
    t.op = op;
    t.label = label;
    p_.tasks.push_back(std::move(t));
    signalled_.push_back(false);
    return TaskRef(*this, p_.tasks.size() - 1);
  }
  /// COPY x -> y, the simplest whole-buffer reader/writer.
  TaskRef copy(const std::string& label, int x, int y) { return task(ir::Opcode::Copy, label).in({x}).out({y}); }
  /// GEMV_TILE x, W -> y cols [n_off, n_off + n_tile).
  TaskRef gemv(const std::string& label, int x, int w, int y, int64_t k, int64_t n_off, int64_t n_tile) {
    return task(ir::Opcode::GemvTile, label).in({x, w}).out({y}).tile(k, n_off, n_tile);
  }
  /// Bind buffers to one new page of `nbytes` (every buffer starts at byte 0).
  int page(std::vector<int> buffers, int64_t nbytes, ir::MemSpace space = ir::MemSpace::GlobalScratch) {
    if (!p_.pages) p_.pages = ir::PageAllocation{};
    const auto id = static_cast<int32_t>(p_.pages->pages.size());
    p_.pages->pages.push_back(ir::Page{ir::PageId(id), space, nbytes, -1, -1});
    for (int b : buffers) p_.pages->buffer_to_page.emplace_back(ir::BufferId(b), ir::PageId(id));
    return id;
  }
  ir::Program& program() { return p_; }
  /// The program, with a fresh counter for every task that never called signal().
  ir::Program build() {
    for (size_t i = 0; i < p_.tasks.size(); ++i) {
      if (signalled_[i]) continue;
      p_.tasks[i].out_counter = ir::CounterId(counter("auto " + p_.tasks[i].label));
      signalled_[i] = true;
    }
    return p_;
  }

 private:
  ir::Program p_;
  std::vector<bool> signalled_;
};

/// The first error (or warning) with `rule`, or nullptr.
inline const ir::Diagnostic* find_rule(const ir::ValidationResult& r, const std::string& rule, bool warning = false) {
  for (const ir::Diagnostic& d : warning ? r.warnings : r.errors)
    if (d.rule == rule) return &d;
  return nullptr;
}
/// How many listed errors carry `rule`.
inline int count_rule(const ir::ValidationResult& r, const std::string& rule) {
  int n = 0;
  for (const ir::Diagnostic& d : r.errors) n += d.rule == rule ? 1 : 0;
  return n;
}
/// Whether a diagnostic lists task id `t`.
inline bool names_task(const ir::Diagnostic& d, int t) {
  for (ir::TaskId id : d.tasks)
    if (id.value == t) return true;
  return false;
}

}  // namespace amk::testing
