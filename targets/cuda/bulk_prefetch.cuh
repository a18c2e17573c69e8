// targets/cuda/bulk_prefetch.cuh: the sm_90 fast path for warming L2 with a weight tile: one
// cp.async.bulk.prefetch.L2 per 64 KiB piece instead of one prefetch instruction per 128-byte line.
// AMK_HAVE_BULK_PREFETCH is 1 only when compiling device code for sm_90+; elsewhere (older CUDA
// archs, HIP) the portable per-line prefetch in targets/gpu.h is used.
#pragma once
#include "targets/gpu.h"

#if !defined(AMK_USE_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define AMK_HAVE_BULK_PREFETCH 1
#else
#define AMK_HAVE_BULK_PREFETCH 0
#endif  // sm_90

namespace amk::gpu {

/// Warm the L2 with [p, p + bytes), spread over the calling threads (`first` of `stride`).
AMK_DEVICE void prefetch_l2(const void* p, uint64_t bytes, int first, int stride) {
#if AMK_HAVE_BULK_PREFETCH
  const uint64_t addr = reinterpret_cast<uint64_t>(p);
  // Bulk prefetch wants a 16-byte aligned address and size: cover the aligned interior with bulk
  // pieces and leave the (at most two) ragged 16-byte ends to the per-line path.
  const uint64_t lo = (addr + 15u) & ~uint64_t{15};
  const uint64_t hi = (addr + bytes) & ~uint64_t{15};
  if (hi > lo) {
    constexpr uint64_t kPiece = 64u * 1024u;
    for (uint64_t off = static_cast<uint64_t>(first) * kPiece; lo + off < hi;
         off += static_cast<uint64_t>(stride) * kPiece) {
      const uint64_t n = (hi - lo - off) < kPiece ? (hi - lo - off) : kPiece;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo + off), "r"(static_cast<uint32_t>(n))
                   : "memory");
    }
    if (first == 0 && lo > addr) prefetch_l2_lines(p, 1, 0, 1);
    if (first == 0 && addr + bytes > hi) prefetch_l2_lines(reinterpret_cast<const void*>(hi), 1, 0, 1);
    return;
  }
#endif  // AMK_HAVE_BULK_PREFETCH
  prefetch_l2_lines(p, bytes, first, stride);
}

}  // namespace amk::gpu
