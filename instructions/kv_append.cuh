// instructions/kv_append.cuh: KV_APPEND (16) on the device: cache[pos, :] = new, pos following
// the step under STEP_POS. decode_kv_append() rejects pos outside [0, S) before anything is
// written, so a bad step is a task error, never an out-of-bounds store.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/kv_append.h"

namespace amk::instructions {

/// KV_APPEND, whole block.
AMK_DEVICE_NOINLINE int32_t kv_append_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  KvAppendArgs* const s_args = shared_args<KvAppendArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(
      s_args, ctx, [&](KvAppendArgs* out) { return decode_kv_append(p, inst, out); },
      [&](KvAppendArgs* out) { return bind_kv_append_step(p, inst, out); }));
  const KvAppendArgs& a = *s_args;
  block_for(a.row, [&](int64_t i) { a.cache.store(a.pos * a.row + i, a.src.load(i)); });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
