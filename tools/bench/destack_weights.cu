// tools/bench/destack_weights.cu: see destack_weights.h. Setup code, run once per benchmark: a
// strided 2-D copy for an untransposed part, one thread per element for a transposed one.
#include "tools/bench/destack_weights.h"

#include <cuda_runtime.h>

#include <string>

namespace amk::bench {
namespace {

Status cuda_status(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::ok()
                          : Status(StatusCode::GpuRuntime, std::string(what) + ": " + cudaGetErrorString(e));
}

/// out[j * n + i] = stacked[(i * parts + p) * k + j] (2-byte elements).
__global__ void transpose_part(const uint16_t* stacked, int64_t n, int64_t parts, int64_t k, int64_t p, uint16_t* out) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * k) return;
  const int64_t i = e % n, j = e / n;  // consecutive threads write consecutive outputs
  out[e] = stacked[(i * parts + p) * k + j];
}

/// out row b * hd + i = permuted row b * hd + 2i, out row b * hd + i + hd / 2 = permuted row
/// b * hd + 2i + 1 (i < hd / 2; 2-byte elements).
__global__ void unpermute_rows(const uint16_t* permuted, int64_t n, int64_t k, int64_t hd, uint16_t* out) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * k) return;
  const int64_t r = e / k, c = e % k, m = r % hd, half = hd / 2;
  const int64_t src = r - m + (m < half ? 2 * m : 2 * (m - half) + 1);
  out[e] = permuted[src * k + c];
}

}  // namespace

DestackedWeights::~DestackedWeights() {
  for (void* a : allocs_) cudaFree(a);
}

Status DestackedWeights::part(const void* stacked, int64_t n, int64_t parts, int64_t k, int64_t p, bool transpose,
                              const void** out) {
  if (stacked == nullptr || n < 1 || k < 1 || parts < 1 || p < 0 || p >= parts)
    return Status(StatusCode::InvalidArgument, "destack: part " + std::to_string(p) + " of a [" + std::to_string(n) +
                                                   ", " + std::to_string(parts) + ", " + std::to_string(k) + "] buffer");
  void* dst = nullptr;
  if (Status s = cuda_status(cudaMalloc(&dst, static_cast<size_t>(n * k) * 2), "cudaMalloc (destacked weight)"); !s)
    return s;
  allocs_.push_back(dst);
  const auto* src = static_cast<const uint16_t*>(stacked);
  if (!transpose) {
    const size_t row = static_cast<size_t>(k) * 2;
    if (Status s = cuda_status(cudaMemcpy2D(dst, row, src + p * k, row * static_cast<size_t>(parts), row,
                                            static_cast<size_t>(n), cudaMemcpyDeviceToDevice),
                               "cudaMemcpy2D (destacked weight)");
        !s)
      return s;
  } else {
    const int threads = 256;
    transpose_part<<<static_cast<unsigned>((n * k + threads - 1) / threads), threads>>>(src, n, parts, k, p,
                                                                                      static_cast<uint16_t*>(dst));
    if (Status s = cuda_status(cudaGetLastError(), "transpose_part launch"); !s) return s;
    if (Status s = cuda_status(cudaDeviceSynchronize(), "transpose_part"); !s) return s;
  }
  *out = dst;
  return Status::ok();
}

}  // namespace amk::bench

namespace amk::bench {

Status DestackedWeights::unpermuted(const void* permuted, int64_t n, int64_t k, int64_t head_dim, const void** out) {
  if (permuted == nullptr || n < 1 || k < 1 || head_dim < 2 || head_dim % 2 != 0 || n % head_dim != 0)
    return Status(StatusCode::InvalidArgument, "unpermute: a [" + std::to_string(n) + ", " + std::to_string(k) +
                                                   "] buffer in rope-pair order for head_dim " + std::to_string(head_dim));
  void* dst = nullptr;
  if (Status s = cuda_status(cudaMalloc(&dst, static_cast<size_t>(n * k) * 2), "cudaMalloc (unpermuted weight)"); !s)
    return s;
  allocs_.push_back(dst);
  const int threads = 256;
  unpermute_rows<<<static_cast<unsigned>((n * k + threads - 1) / threads), threads>>>(
      static_cast<const uint16_t*>(permuted), n, k, head_dim, static_cast<uint16_t*>(dst));
  if (Status s = cuda_status(cudaGetLastError(), "unpermute_rows launch"); !s) return s;
  if (Status s = cuda_status(cudaDeviceSynchronize(), "unpermute_rows"); !s) return s;
  *out = dst;
  return Status::ok();
}

}  // namespace amk::bench
