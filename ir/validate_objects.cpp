// ir/validate_objects.cpp: builds MemObjects (validate_objects.h): every access of every task, as
// boxes over its buffer object and, for shared pages, also over the page's bytes; less the
// ROPE_ATTENTION / ATTENTION_GEMV_ADD cache reads that cannot meet a write (step_rows_only below).
#include "ir/validate_objects.h"

#include <algorithm>
#include <string_view>

#include "ir/params.h"

namespace amk::ir::detail {
namespace {

// Rows of a partial-width region are separate byte ranges; past this many, the region is
// over-approximated by one range (only absurd tiles get here).
constexpr int64_t kMaxRowRanges = int64_t{1} << 16;

bool is_recipe(const Task& t, std::string_view name) {
  if (t.op != Opcode::Fused) return false;
  const auto r = t.params.get_string("recipe");
  return r && *r == name;
}

bool has_flags(const Task& t, int64_t bits) {
  const auto f = t.params.get_int("flags");
  return f && (*f & bits) == bits;
}

// A KV_APPEND, FUSED ROPE_APPEND or a step-position GEMV's append (RMSNORM_GEMV_APPEND,
// RMSNORM_GEMV_ROPE_APPEND) under STEP_POS with pos >= 0: it writes the cache row step.pos + pos,
// never a row before the step's position.
bool appends_at_or_after_step(const Task& t) {
  return (t.op == Opcode::KvAppend || is_recipe(t, "ROPE_APPEND") || is_recipe(t, "RMSNORM_GEMV_APPEND") ||
          is_recipe(t, "RMSNORM_GEMV_ROPE_APPEND")) &&
         has_flags(t, kFlagStepPos) && t.params.int_or("pos", 0) >= 0;
}

// A FUSED ROPE_ATTENTION's or ATTENTION_GEMV_ADD's cache reads (inputs 1 and 2 of both) cover rows
// before the step's position p only: the STEP_KV window ends at p + 1 and row p comes from k_new /
// v_new (docs/OPCODES.md).
bool reads_cache_before_step(const Task& t, const Access& a) {
  return !a.write && (a.operand == 1 || a.operand == 2) &&
         (is_recipe(t, "ROPE_ATTENTION") || is_recipe(t, "ATTENTION_GEMV_ADD")) &&
         has_flags(t, kFlagStepPos | kFlagStepKv) && t.params.int_or("pos", 0) == 0;
}

}  // namespace

void region_bytes(const Buffer& buffer, const Region& region, std::vector<Box>& out) {
  if (buffer.nbytes() < 0) return;  // an overflowing shape (reported as `shape`) has no byte range
  const MatrixView v = matrix_view(buffer);
  const int64_t bits = dtype_bits(buffer.dtype);
  Region r = region;
  r.row_begin = std::clamp<int64_t>(r.row_begin, 0, v.rows);
  r.row_end = std::clamp<int64_t>(r.row_end, 0, v.rows);
  r.col_begin = std::clamp<int64_t>(r.col_begin, 0, v.cols);
  r.col_end = std::clamp<int64_t>(r.col_end, 0, v.cols);
  if (r.empty()) return;
  // Element e lives in bits [e*bits, (e+1)*bits); a byte range rounds outwards.
  auto range = [&](int64_t e0, int64_t e1) { out.push_back(Box{0, 1, e0 * bits / 8, (e1 * bits + 7) / 8}); };
  const bool full_width = r.col_begin == 0 && r.col_end == v.cols;
  if (full_width || r.row_end - r.row_begin == 1 || r.row_end - r.row_begin > kMaxRowRanges) {
    range(r.row_begin * v.cols + r.col_begin, (r.row_end - 1) * v.cols + r.col_end);
    return;
  }
  for (int64_t row = r.row_begin; row < r.row_end; ++row) range(row * v.cols + r.col_begin, row * v.cols + r.col_end);
}

MemObjects build_objects(const ProgramIndex& ix, const std::vector<int32_t>& sequence) {
  const Program& p = *ix.program;
  MemObjects m;
  m.n_buffers = static_cast<int32_t>(p.buffers.size());
  m.page_object.assign(m.n_buffers, kNone);
  m.byte_mode.assign(m.n_buffers, 0);
  for (int32_t b = 0; b < m.n_buffers; ++b) m.byte_mode[b] = dtype_bits(p.buffers[b].dtype) < 8 ? 1 : 0;
  if (p.pages) {
    // Pages binding two or more buffers become objects; the first binding of a buffer counts.
    std::vector<int32_t> page_of_buffer(m.n_buffers, kNone), bound(p.pages->pages.size(), 0);
    for (const auto& [bid, pid] : p.pages->buffer_to_page) {
      const int32_t b = position_of(ix.buffer_of_id, bid), g = position_of(ix.page_of_id, pid);
      if (b == kNone || g == kNone || page_of_buffer[b] != kNone) continue;
      page_of_buffer[b] = g;
      ++bound[g];
    }
    std::vector<int32_t> object_of_page(p.pages->pages.size(), kNone);
    for (size_t g = 0; g < bound.size(); ++g) {
      if (bound[g] < 2) continue;
      object_of_page[g] = m.n_buffers + static_cast<int32_t>(m.object_page.size());
      m.object_page.push_back(static_cast<int32_t>(g));
      m.byte_mode.push_back(1);
    }
    for (int32_t b = 0; b < m.n_buffers; ++b)
      if (page_of_buffer[b] != kNone) m.page_object[b] = object_of_page[page_of_buffer[b]];
  }
  const int32_t n_obj = m.n_buffers + static_cast<int32_t>(m.object_page.size());
  // Reads of read-only buffers need no ordering; keep them only where a rule still looks at them
  // (an on-chip buffer's SM, or a read-only buffer some task writes anyway).
  std::vector<uint8_t> keep(m.n_buffers, 0);
  for (int32_t b = 0; b < m.n_buffers; ++b)
    keep[b] = !buffer_kind_is_readonly(p.buffers[b].kind) || mem_space_is_on_chip(p.buffers[b].space);
  for (const Task& t : p.tasks)
    for (BufferId id : t.outputs)
      if (const int32_t b = position_of(ix.buffer_of_id, id); b != kNone) keep[b] = 1;
  // KV caches whose every writer appends at or after the step's position: a ROPE_ATTENTION or
  // ATTENTION_GEMV_ADD read of one (rows before that position) shares no byte with any write,
  // whatever the order, so it is left out (a region cannot say "rows < step.pos"). Caches on pages
  // or on chip keep every access, for the rules that look at those.
  std::vector<uint8_t> step_rows_only(m.n_buffers, 0);
  for (int32_t b = 0; b < m.n_buffers; ++b)
    step_rows_only[b] = p.buffers[b].kind == BufferKind::KvCache && m.page_object[b] == kNone &&
                        !mem_space_is_on_chip(p.buffers[b].space);
  for (const Task& t : p.tasks)
    for (BufferId id : t.outputs)
      if (const int32_t b = position_of(ix.buffer_of_id, id); b != kNone && !appends_at_or_after_step(t))
        step_rows_only[b] = 0;

  // One pass collecting (object, access), then a stable counting sort by object.
  std::vector<ObjAccess> flat;
  std::vector<int32_t> flat_obj;
  std::vector<Access> scratch;
  flat.reserve(sequence.size() * 3);
  flat_obj.reserve(sequence.size() * 3);
  m.boxes.reserve(sequence.size() * 3);
  for (int32_t t : sequence) {
    scratch.clear();
    task_accesses_append(p, p.tasks[t], scratch, &ix.buffer_of_id);
    for (const Access& a : scratch) {
      const int32_t b = position_of(ix.buffer_of_id, a.buffer);
      if (b == kNone || !keep[b]) continue;
      if (step_rows_only[b] && reads_cache_before_step(p.tasks[t], a)) continue;
      const Buffer& buf = p.buffers[b];
      ObjAccess oa{t, b, a.write, static_cast<int32_t>(m.boxes.size()), 0, a.accumulate};
      if (m.byte_mode[b]) {
        region_bytes(buf, a.region, m.boxes);
      } else if (!a.region.empty()) {
        m.boxes.push_back(Box{a.region.row_begin, a.region.row_end, a.region.col_begin, a.region.col_end});
      }
      oa.box_end = static_cast<int32_t>(m.boxes.size());
      if (oa.box_end == oa.box_begin) continue;
      flat.push_back(oa);
      flat_obj.push_back(b);
      if (m.page_object[b] != kNone) {
        ObjAccess po{t, b, a.write, static_cast<int32_t>(m.boxes.size()), 0, a.accumulate};
        region_bytes(buf, a.region, m.boxes);
        po.box_end = static_cast<int32_t>(m.boxes.size());
        if (po.box_end == po.box_begin) continue;
        flat.push_back(po);
        flat_obj.push_back(m.page_object[b]);
      }
    }
  }
  m.begin.assign(n_obj + 1, 0);
  for (int32_t o : flat_obj) ++m.begin[o + 1];
  for (int32_t o = 0; o < n_obj; ++o) m.begin[o + 1] += m.begin[o];
  m.accesses.resize(flat.size());
  std::vector<int32_t> fill(m.begin.begin(), m.begin.end() - 1);
  for (size_t i = 0; i < flat.size(); ++i) m.accesses[fill[flat_obj[i]]++] = flat[i];
  return m;
}

}  // namespace amk::ir::detail
