// ir/hb_query.cpp: the batched happens-before oracle of hb_query.h. Searches are bounded by
// topological position (a path from a to b only visits nodes positioned between them) and
// stop as soon as every target of the chosen endpoint is found.
#include "ir/hb_query.h"

#include <algorithm>
#include <queue>
#include <tuple>

namespace amk::ir::detail {

bool HbQueries::ask(int32_t a, int32_t b, int32_t context) {
  ++asked_;
  if (g_.direct(a, b, ix_)) return true;
  pending_.push_back(HbQuestion{a, b, context});
  return false;
}

// Mark-and-sweep from `from`, forward (out-edges, pos <= limit) or backward (in-edges,
// pos >= limit); nodes stamped in target_ with gen_ count as found. Returns true when all were.
bool HbQueries::search(int32_t from, bool forward, int32_t limit, int32_t stop_at) {
  const auto& begin = forward ? g_.out_begin : g_.in_begin;
  const auto& adj = forward ? g_.out : g_.in;
  stack_.assign(1, from);
  seen_[from] = gen_;
  int32_t left = stop_at;
  while (!stack_.empty()) {
    const int32_t v = stack_.back();
    stack_.pop_back();
    for (int32_t k = begin[v]; k < begin[v + 1]; ++k) {
      const int32_t u = adj[k];
      if (seen_[u] == gen_) continue;
      if (forward ? g_.pos[u] > limit : g_.pos[u] < limit) continue;
      seen_[u] = gen_;
      if (target_[u] == gen_ && --left == 0) return true;
      stack_.push_back(u);
    }
  }
  return false;
}

bool HbQueries::ordered(int32_t a, int32_t b) {
  if (a == b || g_.pos[a] >= g_.pos[b]) return false;
  if (g_.direct(a, b, ix_)) return true;
  if (seen_.empty()) {
    seen_.assign(g_.n_nodes, 0);
    target_.assign(g_.n_nodes, 0);
  }
  ++gen_;
  target_[b] = gen_;
  return search(a, true, g_.pos[b], 1);
}

std::vector<HbQuestion> HbQueries::resolve() {
  std::vector<HbQuestion> failed;
  if (pending_.empty()) return failed;
  // Deduplicate by (a, b), keeping the first context asked.
  std::stable_sort(pending_.begin(), pending_.end(), [](const HbQuestion& x, const HbQuestion& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  std::vector<HbQuestion> q;
  for (const HbQuestion& h : pending_)
    if (q.empty() || q.back().a != h.a || q.back().b != h.b) q.push_back(h);
  pending_.clear();
  pending_.shrink_to_fit();
  if (seen_.empty()) {
    seen_.assign(g_.n_nodes, 0);
    target_.assign(g_.n_nodes, 0);
  }

  // Questions by source and by target, with live counts per endpoint.
  const int32_t n = g_.n_nodes;
  auto group = [&](bool by_a, std::vector<int32_t>& begin, std::vector<int32_t>& idx) {
    begin.assign(n + 1, 0);
    for (const HbQuestion& h : q) ++begin[(by_a ? h.a : h.b) + 1];
    for (int32_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    idx.resize(q.size());
    std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < q.size(); ++i) idx[fill[by_a ? q[i].a : q[i].b]++] = static_cast<int32_t>(i);
  };
  std::vector<int32_t> a_begin, a_idx, b_begin, b_idx;
  group(true, a_begin, a_idx);
  group(false, b_begin, b_idx);
  std::vector<int32_t> live_a(n), live_b(n);
  for (int32_t v = 0; v < n; ++v) {
    live_a[v] = a_begin[v + 1] - a_begin[v];
    live_b[v] = b_begin[v + 1] - b_begin[v];
  }
  std::vector<uint8_t> done(q.size(), 0);
  using Entry = std::tuple<int32_t, int32_t, int32_t>;  // (live count, node, 1 = as source / 0 = as target)
  std::priority_queue<Entry> heap;
  for (int32_t v = 0; v < n; ++v) {
    if (live_a[v] > 0) heap.emplace(live_a[v], v, 1);
    if (live_b[v] > 0) heap.emplace(live_b[v], v, 0);
  }
  while (!heap.empty()) {
    const auto [count, v, as_source] = heap.top();
    heap.pop();
    const int32_t live = as_source ? live_a[v] : live_b[v];
    if (live == 0) continue;
    if (live != count) {  // stale entry: requeue with the current count
      heap.emplace(live, v, as_source);
      continue;
    }
    const auto& begin = as_source ? a_begin : b_begin;
    const auto& idx = as_source ? a_idx : b_idx;
    ++gen_;
    int32_t limit = as_source ? -1 : n;
    int32_t targets = 0;
    for (int32_t k = begin[v]; k < begin[v + 1]; ++k) {
      const HbQuestion& h = q[idx[k]];
      if (done[idx[k]]) continue;
      const int32_t other = as_source ? h.b : h.a;
      limit = as_source ? std::max(limit, g_.pos[other]) : std::min(limit, g_.pos[other]);
      if (target_[other] != gen_) {
        target_[other] = gen_;
        ++targets;
      }
    }
    search(v, as_source != 0, limit, targets);
    for (int32_t k = begin[v]; k < begin[v + 1]; ++k) {
      const int32_t i = idx[k];
      if (done[i]) continue;
      done[i] = 1;
      const HbQuestion& h = q[i];
      const int32_t other = as_source ? h.b : h.a;
      if (seen_[other] != gen_) failed.push_back(h);
      if (as_source) --live_b[h.b]; else --live_a[h.a];
    }
    (as_source ? live_a : live_b)[v] = 0;
  }
  std::sort(failed.begin(), failed.end(), [](const HbQuestion& x, const HbQuestion& y) { return x.context < y.context; });
  return failed;
}

}  // namespace amk::ir::detail
