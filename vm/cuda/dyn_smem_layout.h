// vm/cuda/dyn_smem_layout.h: where the persistent kernel puts its work area and its weight ring in
// dynamic shared memory. The kernel rounds the dynamic base up to kDynSmemAlign and places both
// from there, so their addresses no longer depend on the size of the static SharedState (the
// dynamic region follows it). Before, a change that only grew a TaskSlot moved the ring with it:
// the ring's address mod 64 alone moved a Llama-1B token by 7% on the H200 (a ring at 48 mod 64:
// 1.378 ms, at 16 mod 64: 1.284; docs/PERFORMANCE.md row 77). The ring starts kRingSkewDefault
// bytes past a 1024-byte boundary, the fastest of the offsets measured there.
#pragma once
#include <cstdint>

#include "instructions/common/hd.h"

namespace amk::vm::gpuvm {

/// The kernel rounds its dynamic shared memory base up to this.
inline constexpr int64_t kDynSmemAlign = 1024;
/// Bytes that rounding may skip: the base is at least 16-byte aligned (an extern float4 array).
inline constexpr int64_t kDynSmemSlack = kDynSmemAlign - 16;
/// Bytes between a 1024-byte boundary and the ring (AMK_RING_SKEW overrides it for measuring).
inline constexpr int64_t kRingSkewDefault = 16;
/// The largest skew: a multiple of 16 below kDynSmemAlign.
inline constexpr int64_t kRingSkewMax = kDynSmemAlign - 16;

/// Bytes from a dynamic base at shared-window offset `at` to the next kDynSmemAlign boundary
/// (at most kDynSmemSlack for a 16-byte-aligned base): what the kernel skips.
AMK_HD constexpr uint32_t dyn_smem_align_skip(uint32_t at) {
  constexpr uint32_t kMask = static_cast<uint32_t>(kDynSmemAlign) - 1u;
  return (kMask + 1u - (at & kMask)) & kMask;
}

/// The dynamic shared memory of one worker block, from its aligned base.
struct DynSmemLayout {
  int64_t ring_offset = 0;  ///< bytes from the aligned base to ring slot 0 (the work area is at 0)
  int64_t bytes = 0;        ///< what the launch must ask for: the slack, the work area and the ring
};

/// The layout for a work area of `work_bytes` and `slots` ring slots of `slot_bytes`, the ring
/// `skew` bytes past the first 1024-byte boundary at or after the work area's end. `skew` is
/// clamped to [0, kRingSkewMax] and rounded down to a multiple of 16 (the bulk copy's alignment).
constexpr DynSmemLayout dyn_smem_layout(int64_t work_bytes, int64_t skew, int64_t slots, int64_t slot_bytes) {
  const int64_t s = (skew < 0 ? 0 : skew > kRingSkewMax ? kRingSkewMax : skew) / 16 * 16;
  const int64_t work = work_bytes < 0 ? 0 : work_bytes;
  DynSmemLayout l;
  if (slots <= 0) {  // no ring: the work area alone
    l.bytes = kDynSmemSlack + work;
    return l;
  }
  l.ring_offset = (work + kDynSmemAlign - 1) / kDynSmemAlign * kDynSmemAlign + s;
  l.bytes = kDynSmemSlack + l.ring_offset + slots * slot_bytes;
  return l;
}

}  // namespace amk::vm::gpuvm
