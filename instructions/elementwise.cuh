// instructions/elementwise.cuh: the block-strided loop the elementwise micro-kernels share.
#pragma once
#include "instructions/device_common.cuh"

namespace amk::instructions {

/// f(i) for every i in [0, n), spread over the block's threads.
template <typename F>
AMK_DEVICE void block_for(int64_t n, F&& f) {
  for (int64_t i = block_tid(); i < n; i += block_threads()) f(i);
}

}  // namespace amk::instructions
