// instructions/embed_ref.cpp: CPU reference of EMBED. All ids are checked first so that a bad id
// leaves y untouched (the error names the task; a half-written y would only confuse a reader).
#include "instructions/embed.h"

namespace amk::instructions {

int32_t embed_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  EmbedArgs a;
  AMK_TRY_DEV(decode_embed(prog, inst, &a));
  for (int64_t m = 0; m < a.ids.numel; ++m) {
    const int32_t id = embed_id(a, m);
    if (id < 0 || id >= a.vocab) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  }
  for (int64_t m = 0; m < a.ids.numel; ++m) {
    const int64_t src = static_cast<int64_t>(embed_id(a, m)) * a.hidden;
    for (int64_t h = 0; h < a.hidden; ++h) a.y.store(m * a.hidden + h, a.table.load(src + h));
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
