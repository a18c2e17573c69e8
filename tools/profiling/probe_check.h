// tools/profiling/probe_check.h: the profiling probes' CUDA error check. A probe defines PROBE_NAME
// (its binary's name) before including this; a failed call prints the probe, the call and the
// error, and exits 1.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#ifndef PROBE_NAME
#error "define PROBE_NAME (the probe binary's name) before including probe_check.h"
#endif  // PROBE_NAME

#define PROBE_CHECK(x)                                                                  \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, #x, cudaGetErrorString(e_));    \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
