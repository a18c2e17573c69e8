// ir/program.cpp: derived quantities of the data model.
#include "ir/program.h"

#include <limits>

namespace amk::ir {

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

int64_t Buffer::nbytes() const {
  const int64_t n = numel();
  if (n < 0 || n > std::numeric_limits<int64_t>::max() / 32) return -1;
  return dtype_nbytes(dtype, n);
}

std::vector<int64_t> Buffer::contiguous_strides() const {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t PageAllocation::total_scratch_bytes() const {
  int64_t total = 0;
  for (const Page& p : pages) total += p.nbytes;
  return total;
}

double GpuTarget::bandwidth_bound_us(int64_t weight_bytes) const {
  if (hbm_bandwidth_gbs <= 0.0) return 0.0;
  return static_cast<double>(weight_bytes) / (hbm_bandwidth_gbs * 1e9) * 1e6;
}

int64_t Program::total_weight_bytes() const {
  int64_t total = 0;
  for (const Buffer& b : buffers)
    if (b.kind == BufferKind::Weight || b.kind == BufferKind::Const) total += std::max<int64_t>(b.nbytes(), 0);
  return total;
}

}  // namespace amk::ir
