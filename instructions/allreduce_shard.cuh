// instructions/allreduce_shard.cuh: ALLREDUCE_SHARD (15) on the device: y = s_1 + ... + s_k per
// element, summed in input order in fp32 like the CPU reference (y may be one of the shards: each
// element's inputs are read before it is written, by the same thread).
#pragma once
#include "instructions/allreduce_shard.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// ALLREDUCE_SHARD, whole block.
AMK_DEVICE_NOINLINE int32_t allreduce_shard_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  AllreduceShardArgs* const s_args = shared_args<AllreduceShardArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](AllreduceShardArgs* out) { return decode_allreduce_shard(p, inst, out); }));
  const AllreduceShardArgs& a = *s_args;
  block_for(a.y.numel, [&](int64_t i) {
    float acc = a.s[0].load(i);
    for (int32_t j = 1; j < a.k; ++j) acc += a.s[j].load(i);
    a.y.store(i, acc);
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
