// instructions/sample_argmax_ref.cpp: CPU reference of SAMPLE_ARGMAX: one scan with the same
// comparison the device reduction uses (over the tile's logits, or the combine's candidates).
#include "instructions/sample_argmax.h"

namespace amk::instructions {

int32_t sample_argmax_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  SampleArgmaxArgs a;
  AMK_TRY_DEV(decode_sample_argmax(prog, inst, &a));
  float best_v = 0.0f;
  int64_t best_i = -1;
  auto consider = [&](int64_t i) {
    const float v = a.logits.load(i);
    if (best_i < 0 || argmax_better(v, i, best_v, best_i)) {
      best_v = v;
      best_i = i;
    }
  };
  if (a.form == ArgmaxForm::kCombine) {
    // Every candidate is checked before anything is written.
    for (int64_t c = 0; c < a.candidates.numel; ++c) {
      int64_t i = 0;
      AMK_TRY_DEV(argmax_candidate(a, c, &i));
      consider(i);
    }
  } else {
    for (int64_t i = a.begin; i < a.end; ++i) consider(i);
  }
  *argmax_result(a) = static_cast<int32_t>(best_i);
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
