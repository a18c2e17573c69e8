// vm/cuda/sm_claim.h: how a block of the persistent kernel claims its queue when the kernel is
// built with AMK_SM_CLAIM (KernelArgs::sm_claims, docs/SM_BALANCE.md). The block placement moves
// between launches, so each block picks at the launch itself: it starts from the queue ranked for
// the SM it landed on and takes the first one no other block has claimed. Shared by the kernel
// (atomicExch) and the CPU test (std::atomic, tests/vm/sm_claim_test.cpp).
#pragma once
#include <cstdint>

#include "instructions/common/hd.h"

namespace amk::vm::gpuvm {

/// The first worker of first, first + 1, ... (mod n) that this caller wins in the launch of
/// `epoch`: `exchange(w, epoch)` must atomically store epoch into worker w's claim and return what
/// it held, so the first caller to store it wins. With n callers over n workers whose claims held
/// no `epoch` before the launch, each caller wins exactly one worker and no worker is won twice:
/// a caller that finds all n taken would need n other winners. -1 if that happens all the same
/// (claims left holding this epoch: a host bug); the caller then runs no queue, so the launch
/// times out naming the queue nobody ran instead of running one twice.
template <class Exchange>
AMK_HD int claim_first_free(const Exchange& exchange, uint32_t epoch, int first, int n) {
  for (int i = 0; i < n; ++i) {
    const int w = (first + i) % n;
    if (exchange(w, epoch) != epoch) return w;
  }
  return -1;
}

}  // namespace amk::vm::gpuvm
