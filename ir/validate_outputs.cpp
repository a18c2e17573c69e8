// ir/validate_outputs.cpp: output.unproduced (every element of an IO_OUTPUT buffer is written by
// some task) and onchip.sm (an SMEM/REGISTER buffer is only touched by tasks of one assigned SM,
// since on-chip memory is private to the SM that holds it).
#include <algorithm>

#include "ir/validate_checks.h"
#include "ir/validate_objects.h"

namespace amk::ir::detail {

void check_outputs(Context& cx, const MemObjects& m) {
  const Program& p = cx.program;
  std::vector<int64_t> rows, cols;
  std::vector<uint8_t> covered;
  for (int32_t b = 0; b < m.n_buffers; ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind != BufferKind::IoOutput || buf.numel() <= 0) continue;
    const MatrixView v = matrix_view(buf);
    const Box extent = m.byte_mode[b] ? Box{0, 1, 0, buf.nbytes()} : Box{0, v.rows, 0, v.cols};
    rows.assign({extent.r0, extent.r1});
    cols.assign({extent.c0, extent.c1});
    bool any = false;
    auto clip_r = [&](int64_t x) { return std::clamp(x, extent.r0, extent.r1); };
    auto clip_c = [&](int64_t x) { return std::clamp(x, extent.c0, extent.c1); };
    for (int32_t k = m.begin[b]; k < m.begin[b + 1]; ++k) {
      const ObjAccess& a = m.accesses[k];
      if (!a.write) continue;
      any = true;
      for (int32_t x = a.box_begin; x < a.box_end; ++x) {
        const Box& bx = m.boxes[x];
        rows.insert(rows.end(), {clip_r(bx.r0), clip_r(bx.r1)});
        cols.insert(cols.end(), {clip_c(bx.c0), clip_c(bx.c1)});
      }
    }
    if (!any) {
      cx.sink.error("output.unproduced", buffer_ref(p, b) + " is an IO_OUTPUT that no task writes", {}, {b});
      continue;
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    const auto nr = static_cast<int64_t>(rows.size()) - 1, nc = static_cast<int64_t>(cols.size()) - 1;
    covered.assign(static_cast<size_t>(nr * nc), 0);
    auto lb = [](const std::vector<int64_t>& vv, int64_t x) {
      return static_cast<int64_t>(std::lower_bound(vv.begin(), vv.end(), x) - vv.begin());
    };
    for (int32_t k = m.begin[b]; k < m.begin[b + 1]; ++k) {
      const ObjAccess& a = m.accesses[k];
      if (!a.write) continue;
      for (int32_t x = a.box_begin; x < a.box_end; ++x) {
        const Box& bx = m.boxes[x];
        for (int64_t r = lb(rows, clip_r(bx.r0)); r < lb(rows, clip_r(bx.r1)); ++r)
          for (int64_t c = lb(cols, clip_c(bx.c0)); c < lb(cols, clip_c(bx.c1)); ++c) covered[r * nc + c] = 1;
      }
    }
    for (int64_t cell = 0; cell < nr * nc; ++cell) {
      if (covered[cell]) continue;
      const int64_t r = cell / nc, c = cell % nc;
      const std::string part = m.byte_mode[b] ? " bytes [" + std::to_string(cols[c]) + ", " + std::to_string(cols[c + 1]) + ")"
                                              : region_text(Region{rows[r], rows[r + 1], cols[c], cols[c + 1]}, v);
      cx.sink.error("output.unproduced", "part of IO_OUTPUT " + buffer_ref(p, b) + "," + part + ", is never written by any task",
                    {}, {b});
      break;
    }
  }
}

void check_onchip(Context& cx, const MemObjects& m) {
  const Program& p = cx.program;
  for (int32_t b = 0; b < m.n_buffers; ++b) {
    const Buffer& buf = p.buffers[b];
    if (!mem_space_is_on_chip(buf.space)) continue;
    int32_t first = kNone;
    for (int32_t k = m.begin[b]; k < m.begin[b + 1]; ++k) {
      const int32_t t = m.accesses[k].task;
      const std::string space = std::string(mem_space_name(buf.space));
      if (!p.tasks[t].sm) {
        cx.sink.error("onchip.sm", buffer_ref(p, b) + " lives in " + space + " (private to one SM) but " + task_ref(p, t) +
                                       ", which touches it, has no sm", {t}, {b});
        break;
      }
      if (first == kNone) {
        first = t;
      } else if (*p.tasks[t].sm != *p.tasks[first].sm) {
        cx.sink.error("onchip.sm", buffer_ref(p, b) + " lives in " + space + " (private to one SM) but is touched by " +
                                       task_ref(p, first) + " on sm " + std::to_string(*p.tasks[first].sm) + " and " +
                                       task_ref(p, t) + " on sm " + std::to_string(*p.tasks[t].sm), {first, t}, {b});
        break;
      }
    }
  }
}

}  // namespace amk::ir::detail
