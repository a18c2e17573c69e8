// instructions/embed.cuh: EMBED (2) on the device: y[m, :] = table[ids[m], :]. Every id is checked
// first and the block agrees (compute_any) before any row is written, so an id outside [0, V) is
// INDEX_OUT_OF_RANGE with y untouched, never an out-of-bounds read.
#pragma once
#include "instructions/elementwise.cuh"
#include "instructions/embed.h"

namespace amk::instructions {

/// EMBED, whole block.
AMK_DEVICE_NOINLINE int32_t embed_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  EmbedArgs* const s_args = shared_args<EmbedArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](EmbedArgs* out) { return decode_embed(p, inst, out); }));
  const EmbedArgs& a = *s_args;
  int bad = 0;
  block_for(a.ids.numel, [&](int64_t m) {
    const int32_t id = embed_id(a, m);
    if (id < 0 || id >= a.vocab) bad = 1;
  });
  if (compute_any(bad)) return AMK_DEVERR_INDEX_OUT_OF_RANGE;
  block_for(a.ids.numel * a.hidden, [&](int64_t e) {
    const int64_t m = e / a.hidden, h = e - m * a.hidden;
    a.y.store(e, a.table.load(static_cast<int64_t>(embed_id(a, m)) * a.hidden + h));
  });
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
