// schedule/pages.cpp: live intervals on the stage chain, and linear / graph-colored page binding.
#include "schedule/pages.h"

#include <algorithm>
#include <limits>

namespace amk::schedule {
namespace {

struct Interval {
  ir::BufferId buffer;
  int64_t first = std::numeric_limits<int64_t>::max();  ///< first stage that writes it
  int64_t last = -1;                                    ///< last stage that touches it
  int64_t nbytes = 0;
};

// Live intervals of every written ACTIVATION buffer, in buffer id order.
std::vector<Interval> live_intervals(const ir::Program& p, const std::vector<int32_t>& task_stage) {
  std::vector<Interval> iv(p.buffers.size());
  for (const ir::Task& t : p.tasks) {
    const int64_t s = task_stage[static_cast<size_t>(t.id.value)];
    for (ir::BufferId b : t.outputs) {
      Interval& i = iv[static_cast<size_t>(b.value)];
      i.first = std::min(i.first, s);
      i.last = std::max(i.last, s);
    }
    for (ir::BufferId b : t.inputs) iv[static_cast<size_t>(b.value)].last = std::max(iv[static_cast<size_t>(b.value)].last, s);
  }
  std::vector<Interval> out;
  for (const ir::Buffer& b : p.buffers) {
    Interval i = iv[static_cast<size_t>(b.id.value)];
    // Unwritten activations would be validator errors anyway; they get no page.
    if (b.kind != ir::BufferKind::Activation || i.last < i.first) continue;
    i.buffer = b.id;
    i.nbytes = b.nbytes();
    out.push_back(i);
  }
  return out;
}

ir::Page new_page(size_t id, const Interval& i, ir::MemSpace space) {
  ir::Page pg;
  pg.id = ir::PageId(static_cast<int32_t>(id));
  pg.space = space;
  pg.nbytes = i.nbytes;
  pg.live_start = i.first;
  pg.live_end = i.last;
  return pg;
}

// Greedy interval coloring: in order of first stage, reuse a page whose last use is strictly
// earlier; among those pick the smallest that fits, else the largest (it grows least).
ir::PageAllocation graph_color(const ir::Program& p, std::vector<Interval> iv) {
  std::stable_sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) { return a.first < b.first; });
  ir::PageAllocation alloc;
  for (const Interval& i : iv) {
    const ir::MemSpace space = p.buffers[static_cast<size_t>(i.buffer.value)].space;
    int best = -1;
    for (size_t k = 0; k < alloc.pages.size(); ++k) {
      const ir::Page& pg = alloc.pages[k];
      if (pg.live_end >= i.first || pg.space != space) continue;
      if (best < 0) {
        best = static_cast<int>(k);
        continue;
      }
      const ir::Page& cur = alloc.pages[static_cast<size_t>(best)];
      const bool fits = pg.nbytes >= i.nbytes, cur_fits = cur.nbytes >= i.nbytes;
      if ((fits && (!cur_fits || pg.nbytes < cur.nbytes)) || (!fits && !cur_fits && pg.nbytes > cur.nbytes)) {
        best = static_cast<int>(k);
      }
    }
    if (best < 0) {
      alloc.pages.push_back(new_page(alloc.pages.size(), i, space));
      best = static_cast<int>(alloc.pages.size() - 1);
    } else {
      ir::Page& pg = alloc.pages[static_cast<size_t>(best)];
      pg.nbytes = std::max(pg.nbytes, i.nbytes);
      pg.live_end = i.last;  // intervals arrive in first-stage order, so this one ends the page
    }
    alloc.buffer_to_page.emplace_back(i.buffer, ir::PageId(best));
  }
  std::sort(alloc.buffer_to_page.begin(), alloc.buffer_to_page.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return alloc;
}

}  // namespace

Status allocate_pages(ir::Program& p, const std::string& mode, const std::vector<int32_t>& task_stage) {
  if (mode == "none") {
    p.pages.reset();
    return Status::ok();
  }
  std::vector<Interval> iv = live_intervals(p, task_stage);
  if (mode == "linear") {
    ir::PageAllocation alloc;
    for (const Interval& i : iv) {
      alloc.buffer_to_page.emplace_back(i.buffer, ir::PageId(static_cast<int32_t>(alloc.pages.size())));
      alloc.pages.push_back(new_page(alloc.pages.size(), i, p.buffers[static_cast<size_t>(i.buffer.value)].space));
    }
    p.pages = std::move(alloc);
    return Status::ok();
  }
  if (mode == "graph_color") {
    p.pages = graph_color(p, std::move(iv));
    return Status::ok();
  }
  return Status(StatusCode::InvalidArgument,
                "page_allocation: \"" + mode + "\" is not one of \"none\", \"linear\", \"graph_color\"");
}

int64_t program_scratch_bytes(const ir::Program& p) {
  if (p.pages) return p.pages->total_scratch_bytes();
  int64_t total = 0;
  for (const ir::Buffer& b : p.buffers)
    if (b.kind == ir::BufferKind::Activation) total += std::max<int64_t>(b.nbytes(), 0);
  return total;
}

}  // namespace amk::schedule
