// ir/hb_query.h: batched "does A happen before B?" questions over an HbGraph (internal).
// A question with a direct edge is answered at once; the rest are deduplicated and answered by
// bounded searches grouped by endpoint (docs/VALIDATION.md), so that many questions sharing a
// source or a target cost one search.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/hb_graph.h"

namespace amk::ir::detail {

struct HbQuestion {
  int32_t a = 0, b = 0;  ///< tasks: is a hb b?
  int32_t context = 0;   ///< caller's index describing why it asked (first one kept)
};

class HbQueries {
 public:
  HbQueries(const HbGraph& g, const ProgramIndex& ix) : g_(g), ix_(ix) {}
  /// True when a hb b is already known (a direct edge); otherwise the question is queued.
  bool ask(int32_t a, int32_t b, int32_t context);
  /// The direct-edge test alone (counted as a question).
  bool direct(int32_t a, int32_t b) {
    ++asked_;
    return g_.direct(a, b, ix_);
  }
  /// Count a question answered by the caller (e.g. for a whole group at once).
  void count(int64_t n = 1) { asked_ += n; }
  /// Queue a question already known not to be direct.
  void enqueue(int32_t a, int32_t b, int32_t context) { pending_.push_back(HbQuestion{a, b, context}); }
  /// Answer every queued question; returns the ones where a does NOT happen before b.
  std::vector<HbQuestion> resolve();
  /// Whether a hb b, by one search (for the few questions asked after resolve()).
  bool ordered(int32_t a, int32_t b);
  int64_t asked() const { return asked_; }

 private:
  bool search(int32_t from, bool forward, int32_t limit, int32_t stop_at);
  const HbGraph& g_;
  const ProgramIndex& ix_;
  std::vector<HbQuestion> pending_;
  int64_t asked_ = 0;
  std::vector<uint32_t> seen_, target_;
  uint32_t gen_ = 0;
  std::vector<int32_t> stack_;
};

}  // namespace amk::ir::detail
