// instructions/copy_ref.cpp: CPU reference of COPY. Contiguous same-dtype copies are one memmove
// (x and y may overlap when a page is reused); everything else goes element by element.
#include <cstring>

#include "instructions/copy.h"

namespace amk::instructions {

int32_t copy_ref(const amk_program_t& prog, const amk_instruction_t& inst) {
  CopyArgs a;
  AMK_TRY_DEV(decode_copy(prog, inst, &a));
  const int64_t n = a.x.numel;
  if (n == 0) return AMK_DEVERR_NONE;
  const int32_t bits = dtype_bits(a.x.dtype);
  if (a.raw && a.x.contiguous && a.y.contiguous && bits >= 8) {
    std::memmove(a.y.ptr, a.x.ptr, static_cast<size_t>(n) * static_cast<size_t>(bits / 8));
  } else if (a.raw && a.x.dtype == AMK_DTYPE_I4) {
    auto* out = static_cast<uint8_t*>(a.y.ptr);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t nib = static_cast<uint8_t>(i4_load(a.x.ptr, a.x.offset(i)) & 0x0f);
      const int64_t o = a.y.offset(i);
      uint8_t& byte = out[o >> 1];
      byte = (o & 1) ? static_cast<uint8_t>((byte & 0x0f) | (nib << 4)) : static_cast<uint8_t>((byte & 0xf0) | nib);
    }
  } else if (a.raw) {
    const size_t es = static_cast<size_t>(bits / 8);
    for (int64_t i = 0; i < n; ++i)
      std::memmove(static_cast<char*>(a.y.ptr) + a.y.offset(i) * static_cast<int64_t>(es),
                   static_cast<const char*>(a.x.ptr) + a.x.offset(i) * static_cast<int64_t>(es), es);
  } else {
    for (int64_t i = 0; i < n; ++i) a.y.store(i, a.x.load(i));
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
