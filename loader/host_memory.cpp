// loader/host_memory.cpp: aligned zeroed allocation (std::aligned_alloc needs a size that is a
// multiple of the alignment, hence the rounding).
#include "loader/host_memory.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace amk::loader {

void HostBlock::Free::operator()(void* p) const noexcept { std::free(p); }

HostBlock HostBlock::allocate(uint64_t bytes) {
  HostBlock block;
  if (bytes > std::numeric_limits<uint64_t>::max() - kHostAlignment) return block;
  uint64_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded == 0) rounded = kHostAlignment;
  if (rounded > std::numeric_limits<size_t>::max()) return block;
  void* p = std::aligned_alloc(kHostAlignment, static_cast<size_t>(rounded));
  if (p == nullptr) return block;
  std::memset(p, 0, static_cast<size_t>(rounded));
  block.ptr_.reset(p);
  block.size_ = rounded;
  return block;
}

}  // namespace amk::loader
