// tools/bench/tune_search.cpp: see tune_search.h.
#include "tools/bench/tune_search.h"

#include <map>

namespace amk::bench {

TuneSearchResult tune_search(const TuneSpace& space, const schedule::DecodePreset& start, const TuneKeyFn& key_of,
                             const TuneMeasureFn& measure, const TuneSearchOptions& options) {
  TuneSearchResult r;
  std::map<std::string, int> by_key;
  // The candidate's index, measuring it if its schedule is new; -1 once the budget is spent.
  const auto visit = [&](const schedule::DecodePreset& preset, int pass) {
    std::string key = key_of(preset);
    if (const auto it = by_key.find(key); it != by_key.end()) return it->second;
    if (static_cast<int>(r.candidates.size()) >= options.max_candidates) {
      r.budget_exhausted = true;
      return -1;
    }
    TuneCandidate c;
    c.preset = preset;
    c.key = key;
    c.label = tune_label(preset);
    c.pass = pass;
    c.m = measure(preset, key);
    r.candidates.push_back(std::move(c));
    const int index = static_cast<int>(r.candidates.size()) - 1;
    by_key.emplace(std::move(key), index);
    return index;
  };
  const auto faster = [&](int a, int b) {  // a beats b, both measured
    return r.candidates[a].m.ok && r.candidates[a].m.objective_ms < r.candidates[b].m.objective_ms;
  };

  int incumbent = visit(start, 0);
  if (incumbent < 0 || !r.candidates[incumbent].m.ok) return r;
  for (int pass = 1; pass <= options.max_passes && !r.budget_exhausted; ++pass) {
    r.passes = pass;
    bool adopted = false;
    for (const TuneAxis& axis : space.axes) {
      int axis_best = incumbent;
      for (const nlohmann::json& value : axis.values) {
        Result<schedule::DecodePreset> p = tune_apply(r.candidates[incumbent].preset, axis.name, value);
        if (!p) continue;  // tune_space_from_json checked every value; nothing to measure
        const int index = visit(*p, pass);
        if (index < 0) break;
        if (faster(index, axis_best)) axis_best = index;
      }
      if (axis_best != incumbent && tune_gain_confirmed(r.candidates[incumbent].m.objective_ms,
                                                        r.candidates[axis_best].m.objective_ms, options.min_gain)) {
        incumbent = axis_best;
        adopted = true;
      }
      if (r.budget_exhausted) break;
    }
    if (!adopted) break;
  }
  r.best = incumbent;
  return r;
}

bool tune_gain_confirmed(double start_objective_ms, double best_objective_ms, double min_gain) {
  return best_objective_ms < start_objective_ms * (1.0 - min_gain);
}

}  // namespace amk::bench
