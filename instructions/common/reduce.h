// instructions/common/reduce.h: fp32 row reductions shared by the norms and softmax. Eight
// independent partial sums keep the error growth near n/8 and let the compiler vectorise the body
// without reassociating; the GPU kernels reduce in a tree, so neither is "the" order, and both
// stay within the tolerances the tests apply against an fp64 reference.
#pragma once
#include <stdint.h>

#include "instructions/common/hd.h"

namespace amk::instructions {

constexpr int kReduceLanes = 8;

/// Sum of x[0..n).
AMK_HD float row_sum(const float* x, int64_t n) {
  float acc[kReduceLanes] = {};
  int64_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j) acc[j] += x[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

/// Sum of (x[i] - c)^2 over [0, n) (c = 0 for RMSNorm, the mean for LayerNorm's variance).
AMK_HD float row_sum_sq(const float* x, int64_t n, float c) {
  float acc[kReduceLanes] = {};
  int64_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j) acc[j] += (x[i + j] - c) * (x[i + j] - c);
  float tail = 0.0f;
  for (; i < n; ++i) tail += (x[i] - c) * (x[i] - c);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace amk::instructions
