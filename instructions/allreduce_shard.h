// instructions/allreduce_shard.h: ALLREDUCE_SHARD (15) y = s_1 + ... + s_k over equal numel, summed
// in input order in fp32 (on one GPU a local reduction of shards). y may be one of the shards.
#pragma once
#include "instructions/common/tensor.h"

namespace amk::instructions {

/// Decoded ALLREDUCE_SHARD operands.
struct AllreduceShardArgs {
  Tensor s[AMK_MAX_INPUTS];
  Tensor y;
  int32_t k = 0;
};

/// BAD_PARAMS unless 1..8 shards all have y's numel; BAD_DTYPE for non-float operands.
AMK_HD int32_t decode_allreduce_shard(const amk_program_t& p, const amk_instruction_t& inst, AllreduceShardArgs* a) {
  AMK_TRY_DEV(check_arity(inst, 1, AMK_MAX_INPUTS, 1));
  AMK_TRY_DEV(bind_output(p, inst, 0, &a->y));
  AMK_TRY_DEV(require_float(a->y));
  a->k = inst.n_inputs;
  for (int32_t i = 0; i < a->k; ++i) {
    AMK_TRY_DEV(bind_input(p, inst, i, &a->s[i]));
    AMK_TRY_DEV(require_float(a->s[i]));
    if (a->s[i].numel != a->y.numel) return AMK_DEVERR_BAD_PARAMS;
  }
  return AMK_DEVERR_NONE;
}

/// CPU reference of ALLREDUCE_SHARD.
int32_t allreduce_shard_ref(const amk_program_t& prog, const amk_instruction_t& inst);

}  // namespace amk::instructions
