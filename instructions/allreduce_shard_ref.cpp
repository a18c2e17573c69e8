// instructions/allreduce_shard_ref.cpp: CPU reference of ALLREDUCE_SHARD. Every shard's element i
// is read before y[i] is written, so an in-place y is safe.
#include "instructions/allreduce_shard.h"

namespace amk::instructions {

int32_t allreduce_shard_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  AllreduceShardArgs a;
  AMK_TRY_DEV(decode_allreduce_shard(prog, inst, &a));
  for (int64_t i = 0; i < a.y.numel; ++i) {
    float acc = a.s[0].load(i);
    for (int32_t j = 1; j < a.k; ++j) acc += a.s[j].load(i);
    a.y.store(i, acc);
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
