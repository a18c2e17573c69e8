// instructions/sample_argmax_ref.cpp: CPU reference of SAMPLE_ARGMAX: one scan with the same
// comparison the device reduction uses.
#include "instructions/sample_argmax.h"

namespace amk::instructions {

int32_t sample_argmax_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  SampleArgmaxArgs a;
  AMK_TRY_DEV(decode_sample_argmax(prog, inst, &a));
  float best_v = a.logits.load(0);
  int64_t best_i = 0;
  for (int64_t i = 1; i < a.logits.numel; ++i) {
    const float v = a.logits.load(i);
    if (argmax_better(v, i, best_v, best_i)) {
      best_v = v;
      best_i = i;
    }
  }
  static_cast<int32_t*>(a.token.ptr)[a.token.offset(0)] = static_cast<int32_t>(best_i);
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
