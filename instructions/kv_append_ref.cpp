// instructions/kv_append_ref.cpp: CPU reference of KV_APPEND: one row of the cache, nothing else
// (rows other than pos hold earlier steps' keys and values).
#include "instructions/kv_append.h"

namespace amk::instructions {

int32_t kv_append_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  KvAppendArgs a;
  AMK_TRY_DEV(decode_kv_append(prog, inst, &a));
  const int64_t base = a.pos * a.row;
  for (int64_t i = 0; i < a.row; ++i) a.cache.store(base + i, a.src.load(i));
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
