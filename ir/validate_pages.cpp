// ir/validate_pages.cpp: the shared-page walk (page.clobber). Same-buffer pairs are the buffer
// walk's business; here every consecutive pair of accesses to different buffers on the same page
// bytes must be hb-ordered, and a read must find its own buffer's value: if another buffer's
// write came in between (ordered or not), the value was clobbered. A task that reads one buffer
// and writes another on the same bytes clobbers its own input. An accumulate is a read and a write
// of its buffer, so accumulates into two buffers sharing bytes need an order like any writes.
#include <algorithm>

#include "ir/validate_races.h"

namespace amk::ir::detail {

void RaceChecker::page_cell(int32_t o, const Box& cell, const int32_t* entries, int32_t n) {
  int32_t last = kNone, last_buf = kNone;
  std::vector<std::pair<int32_t, int32_t>> readers;  // (task or -1 - group, buffer) since the last write
  std::vector<int32_t> written, reads, writes;
  auto has = [](const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  auto read_of = [&](int32_t code, int32_t t, int32_t x) {
    if (last != kNone && last_buf != x && has(written, x))
      cx_.sink.error("page.clobber", task_ref(p_, t) + " reads " + buffer_ref(p_, x) + " from " + where(o, cell) + ", but " +
                                         task_ref(p_, last) + " writes " + buffer_ref(p_, last_buf) +
                                         " there before the read (the page is reused while its value is still needed)",
                     {last, t}, {x, last_buf});
    readers.emplace_back(code, x);
  };
  for (int32_t i = 0; i < n;) {
    if (entries[i] < 0) {  // a reader group: all read one buffer
      read_of(entries[i], code_task(entries[i]), groups_[-entries[i] - 1].buffer);
      ++i;
      continue;
    }
    const int32_t t = m_.accesses[m_.begin[o] + entries[i]].task;
    reads.clear();
    writes.clear();
    for (; i < n && entries[i] >= 0 && m_.accesses[m_.begin[o] + entries[i]].task == t; ++i) {
      const ObjAccess& a = m_.accesses[m_.begin[o] + entries[i]];
      if (a.write && !has(writes, a.buffer)) writes.push_back(a.buffer);
      // An accumulate reads the value it adds to: its buffer's value must still be on the page.
      if ((!a.write || a.accumulate) && !has(reads, a.buffer)) reads.push_back(a.buffer);
    }
    if (writes.size() > 1)
      cx_.sink.error("page.clobber", task_ref(p_, t) + " writes both " + buffer_ref(p_, writes[0]) + " and " +
                                         buffer_ref(p_, writes[1]) + ", which share " + where(o, cell), {t}, {writes[0], writes[1]});
    for (int32_t x : reads) {
      for (int32_t y : writes)
        if (y != x)
          cx_.sink.error("page.clobber", task_ref(p_, t) + " reads " + buffer_ref(p_, x) + " and writes " + buffer_ref(p_, y) +
                                             ", which share " + where(o, cell) + ": the write clobbers its own input", {t}, {x, y});
      read_of(t, t, x);
    }
    if (writes.empty()) continue;
    const int32_t y = writes[0];
    for (const auto& [r, x] : readers)
      if (x != y && r != t) ask_code(r, t, "page.clobber", o, cell, x, y);
    if (readers.empty() && last != kNone && last_buf != y && last != t) ask(last, t, "page.clobber", o, cell, last_buf, y);
    last = t;
    last_buf = y;
    readers.clear();
    for (int32_t w : writes)
      if (!has(written, w)) written.push_back(w);
  }
}

}  // namespace amk::ir::detail
