// tests/vm/golden_session.h: stepping a Session through the Hugging Face fixture's prompt
// (golden_fixture.h) with each position's logits checked, then greedy decoding on from there.
#pragma once
#include <catch2/catch.hpp>

#include "golden_fixture.h"
#include "vm/session.h"

namespace amk::testing {

/// Feed the prompt, checking each position's logits against `ref` ([prompt_len, vocab]) within
/// relative error `tol`; returns the token after the prompt.
inline int32_t check_prompt(Session& s, const Golden& g, const std::vector<float>& ref, double tol) {
  int32_t next = -1;
  for (size_t i = 0; i < g.prompt.size(); ++i) {
    auto r = s.step(g.prompt[i]);
    REQUIRE(r.is_ok());
    REQUIRE(r->logits.size() == static_cast<size_t>(g.vocab));
    const double err = relative_error(r->logits, &ref[i * static_cast<size_t>(g.vocab)], g.vocab);
    INFO("prompt position " << i << " relative error " << err);
    CHECK(err <= tol);
    next = r->token;
  }
  return next;
}

/// `first`, then greedy tokens fed back until there are `n`.
inline std::vector<int32_t> continue_greedy(Session& s, int32_t first, size_t n) {
  std::vector<int32_t> out{first};
  while (out.size() < n) {
    auto r = s.step(out.back());
    REQUIRE(r.is_ok());
    out.push_back(r->token);
  }
  return out;
}

}  // namespace amk::testing
