// instructions/copy.cuh: COPY (1) on the device. A same-dtype copy moves bits (NaN payloads and
// I4 nibbles kept); contiguous buffers go 4 bytes per thread when aligned. A contiguous I4 copy
// gives each thread one output byte (both nibbles), so no two threads write the same byte; a
// strided I4 copy runs on one thread. Other dtypes convert through fp32 with one cast.
#pragma once
#include "instructions/copy.h"
#include "instructions/elementwise.cuh"

namespace amk::instructions {

/// COPY, whole block.
AMK_DEVICE_NOINLINE int32_t copy_run(const amk_program_t& p, const amk_instruction_t& inst, const DeviceCtx& ctx) {
  CopyArgs* const s_args = shared_args<CopyArgs>();  // decoded once per block (decode_once)
  AMK_TRY_DEV(decode_once(s_args, ctx, [&](CopyArgs* out) { return decode_copy(p, inst, out); }));
  const CopyArgs& a = *s_args;
  const int64_t n = a.x.numel;
  if (n == 0 || a.x.ptr == a.y.ptr) return AMK_DEVERR_NONE;
  const int32_t bits = dtype_bits(a.x.dtype);
  const auto* src = static_cast<const uint8_t*>(a.x.ptr);
  auto* dst = static_cast<uint8_t*>(a.y.ptr);
  if (!a.raw) {
    block_for(n, [&](int64_t i) { a.y.store(i, a.x.load(i)); });
  } else if (bits >= 8 && a.x.contiguous && a.y.contiguous) {
    const int64_t bytes = n * (bits / 8);
    if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | static_cast<uintptr_t>(bytes)) & 3u) == 0) {
      const auto* s4 = reinterpret_cast<const uint32_t*>(src);
      auto* d4 = reinterpret_cast<uint32_t*>(dst);
      block_for(bytes / 4, [&](int64_t i) { d4[i] = s4[i]; });
    } else {
      block_for(bytes, [&](int64_t i) { dst[i] = src[i]; });
    }
  } else if (bits >= 8) {
    const int64_t es = bits / 8;
    block_for(n, [&](int64_t i) {
      for (int64_t b = 0; b < es; ++b) dst[a.y.offset(i) * es + b] = src[a.x.offset(i) * es + b];
    });
  } else if (a.x.contiguous && a.y.contiguous) {
    block_for((n + 1) / 2, [&](int64_t byte) {
      uint8_t out = dst[byte];
      for (int64_t i = 2 * byte; i < 2 * byte + 2 && i < n; ++i) {
        const uint8_t nib = static_cast<uint8_t>(i4_load(src, i) & 0x0f);
        out = (i & 1) ? static_cast<uint8_t>((out & 0x0f) | (nib << 4)) : static_cast<uint8_t>((out & 0xf0) | nib);
      }
      dst[byte] = out;
    });
  } else if (threadIdx.x == 0) {
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t nib = static_cast<uint8_t>(i4_load(src, a.x.offset(i)) & 0x0f);
      const int64_t o = a.y.offset(i);
      uint8_t& byte = dst[o >> 1];
      byte = (o & 1) ? static_cast<uint8_t>((byte & 0x0f) | (nib << 4)) : static_cast<uint8_t>((byte & 0xf0) | nib);
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
