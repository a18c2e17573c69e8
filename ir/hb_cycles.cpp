// ir/hb_cycles.cpp: happens-before inside a strongly connected component of the producer -> waiter
// graph (a counter cycle that does not deadlock, e.g. a chain of tasks that each wait on and signal
// one shared counter). Pre(B) is exact: B is hb-after A iff B cannot fire when A never completes.
// Inside the component that is decided by simulating it alone: once per member A (A removed), and
// once per distinct set of external inputs that one outside ancestor cuts (its "signature").
// Cost: (members + signatures) x component size; components are small in real programs.
#include <algorithm>
#include <map>

#include "ir/hb_partial.h"

namespace amk::ir::detail {
namespace {

// The component as a small self-contained counter machine.
struct LocalMachine {
  int32_t size = 0;
  std::vector<int32_t> qprev_ext, qprev_int, qnext_int, out_lc;  // per member
  std::vector<std::vector<std::pair<int32_t, int64_t>>> waits;   // per member: (local counter, threshold)
  std::vector<std::vector<int32_t>> lc_ext;                      // per local counter: external producers
  std::vector<std::vector<std::pair<int32_t, int64_t>>> lc_waiters;

  // Which members fire when the external inputs marked in `dead_ext` and member `dead` never complete.
  std::vector<uint8_t> fire(const std::vector<uint8_t>& dead_ext, int32_t dead) const {
    std::vector<int64_t> value(lc_ext.size(), 0);
    for (size_t lc = 0; lc < lc_ext.size(); ++lc)
      for (int32_t e : lc_ext[lc]) value[lc] += dead_ext[e] ? 0 : 1;
    std::vector<int64_t> pending(size, 0);
    std::vector<int32_t> ready;
    for (int32_t i = 0; i < size; ++i) {
      int64_t p = (qprev_ext[i] != kNone && dead_ext[qprev_ext[i]]) ? (int64_t{1} << 40) : 0;
      p += qprev_int[i] != kNone ? 1 : 0;
      for (const auto& [lc, thr] : waits[i]) p += thr > value[lc] ? 1 : 0;
      pending[i] = p;
      if (p == 0 && i != dead) ready.push_back(i);
    }
    std::vector<uint8_t> fired(size, 0);
    auto release = [&](int32_t j) {
      if (--pending[j] == 0 && j != dead) ready.push_back(j);
    };
    while (!ready.empty()) {
      const int32_t i = ready.back();
      ready.pop_back();
      fired[i] = 1;
      if (out_lc[i] != kNone) {
        const int64_t v = ++value[out_lc[i]];
        for (const auto& [j, thr] : lc_waiters[out_lc[i]])
          if (thr == v) release(j);
      }
      if (qnext_int[i] != kNone) release(qnext_int[i]);
    }
    return fired;
  }
};

}  // namespace

void Partial::component(const std::vector<int32_t>& tasks) {
  const auto k = static_cast<int32_t>(tasks.size());
  std::map<int32_t, int32_t> local, ext_of, lc_of;  // task -> member, task -> input, counter -> local
  for (int32_t i = 0; i < k; ++i) local[tasks[i]] = i;
  std::vector<int32_t> ext;
  auto ext_index = [&](int32_t t) {
    auto [it, fresh] = ext_of.try_emplace(t, static_cast<int32_t>(ext.size()));
    if (fresh) ext.push_back(t);
    return it->second;
  };
  LocalMachine m;
  m.size = k;
  m.qprev_ext.assign(k, kNone);
  m.qprev_int.assign(k, kNone);
  m.qnext_int.assign(k, kNone);
  m.out_lc.assign(k, kNone);
  m.waits.resize(k);
  for (int32_t i = 0; i < k; ++i) {
    const int32_t b = tasks[i];
    if (const int32_t q = ix_.queue_prev[b]; q != kNone) {
      auto it = local.find(q);
      if (it != local.end()) {
        m.qprev_int[i] = it->second;
        m.qnext_int[it->second] = i;
      } else {
        m.qprev_ext[i] = ext_index(q);
      }
    }
    for (int32_t s = ix_.wait_begin[b]; s < ix_.wait_begin[b + 1]; ++s) {
      if (!counts(s)) continue;
      const int32_t c = ix_.wait_counter[s];
      auto [it, fresh] = lc_of.try_emplace(c, static_cast<int32_t>(m.lc_ext.size()));
      if (fresh) {
        m.lc_ext.emplace_back();
        m.lc_waiters.emplace_back();
        for (int32_t j = ix_.prod_begin[c]; j < ix_.prod_begin[c + 1]; ++j) {
          const int32_t p = ix_.prod[j];
          if (g_.completable[p] && local.find(p) == local.end()) m.lc_ext.back().push_back(ext_index(p));
        }
      }
      m.waits[i].emplace_back(it->second, ix_.wait_threshold[s]);
      m.lc_waiters[it->second].emplace_back(i, ix_.wait_threshold[s]);
    }
  }
  for (int32_t i = 0; i < k; ++i) {
    auto it = lc_of.find(ix_.task_out[tasks[i]]);
    if (ix_.task_out[tasks[i]] != kNone && it != lc_of.end()) m.out_lc[i] = it->second;
  }

  // Outside ancestors grouped by the set of external inputs they precede (their signature).
  std::vector<std::pair<int32_t, int32_t>> anc;  // (ancestor task, input index)
  for (int32_t e = 0; e < static_cast<int32_t>(ext.size()); ++e)
    ancestors(ext[e], [&](int32_t a) { anc.emplace_back(a, e); });
  std::sort(anc.begin(), anc.end());
  std::map<std::vector<int32_t>, int32_t> group_of;
  std::vector<std::vector<int32_t>> members;
  std::vector<const std::vector<int32_t>*> signature;
  for (size_t i = 0; i < anc.size();) {
    std::vector<int32_t> sig;
    size_t j = i;
    for (; j < anc.size() && anc[j].first == anc[i].first; ++j) sig.push_back(anc[j].second);
    auto [it, fresh] = group_of.try_emplace(std::move(sig), static_cast<int32_t>(members.size()));
    if (fresh) {
      members.emplace_back();
      signature.push_back(&it->first);
    }
    members[it->second].push_back(anc[i].first);
    i = j;
  }

  std::vector<std::vector<int32_t>> pre_groups(k), pre_local(k);
  std::vector<uint8_t> dead_ext(ext.size(), 0);
  for (size_t gi = 0; gi < members.size(); ++gi) {
    for (int32_t e : *signature[gi]) dead_ext[e] = 1;
    const std::vector<uint8_t> fired = m.fire(dead_ext, kNone);
    for (int32_t e : *signature[gi]) dead_ext[e] = 0;
    for (int32_t i = 0; i < k; ++i)
      if (!fired[i]) pre_groups[i].push_back(static_cast<int32_t>(gi));
  }
  for (int32_t a = 0; a < k; ++a) {
    const std::vector<uint8_t> fired = m.fire(dead_ext, a);
    for (int32_t i = 0; i < k; ++i)
      if (i != a && !fired[i]) pre_local[i].push_back(a);
  }
  // All of Pre(B) is known before any edge is added, so the edges cannot disturb the searches.
  for (int32_t i = 0; i < k; ++i) {
    std::vector<int32_t> outside;
    for (int32_t gi : pre_groups[i]) outside.insert(outside.end(), members[gi].begin(), members[gi].end());
    if (!outside.empty()) add_maxima(outside, tasks[i]);
    for (int32_t a : pre_local[i]) d_.add(tasks[a], tasks[i]);
  }
}

}  // namespace amk::ir::detail
