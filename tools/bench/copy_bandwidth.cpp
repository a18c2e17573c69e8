// tools/bench/copy_bandwidth.cpp: see copy_bandwidth.h. Host code; runtime calls via targets/gpu.h.
#include "tools/bench/copy_bandwidth.h"

#include <algorithm>
#include <vector>

#include "targets/gpu.h"

namespace amk::bench {
namespace {

/// Frees what it holds on every path out of measure().
struct CopyResources {
  void* a = nullptr;
  void* b = nullptr;
  gpu::Stream stream = nullptr;
  gpu::Event e0 = nullptr, e1 = nullptr;
  ~CopyResources() {
    if (stream != nullptr) (void)gpu::stream_sync(stream);
    if (e0 != nullptr) (void)gpu::event_destroy(e0);
    if (e1 != nullptr) (void)gpu::event_destroy(e1);
    if (stream != nullptr) (void)gpu::stream_destroy(stream);
    if (a != nullptr) (void)gpu::free_device(a);
    if (b != nullptr) (void)gpu::free_device(b);
  }
};

Status measure(size_t bytes, int reps, CopyBandwidth* out) {
  CopyResources r;
  AMK_GPU_TRY(gpu::malloc_device(&r.a, bytes));
  AMK_GPU_TRY(gpu::malloc_device(&r.b, bytes));
  AMK_GPU_TRY(gpu::memset_device(r.a, 1, bytes));
  AMK_GPU_TRY(gpu::stream_create(&r.stream));
  AMK_GPU_TRY(gpu::event_create(&r.e0));
  AMK_GPU_TRY(gpu::event_create(&r.e1));
  std::vector<double> ms;
  for (int i = -2; i < reps; ++i) {
    AMK_GPU_TRY(gpu::event_record(r.e0, r.stream));
    AMK_GPU_TRY(gpu::memcpy_d2d_async(r.b, r.a, bytes, r.stream));
    AMK_GPU_TRY(gpu::event_record(r.e1, r.stream));
    AMK_GPU_TRY(gpu::stream_sync(r.stream));
    float t = 0.0f;
    AMK_GPU_TRY(gpu::event_elapsed_ms(&t, r.e0, r.e1));
    if (i >= 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  out->bytes = bytes;
  out->median_ms = ms[ms.size() / 2];
  out->gbs = 2.0 * static_cast<double>(bytes) / (out->median_ms * 1e-3) / 1e9;
  return Status::ok();
}

}  // namespace

Result<CopyBandwidth> measure_copy_bandwidth(size_t bytes, int reps) {
  if (bytes == 0 || reps < 1) return Status(StatusCode::InvalidArgument, "copy bandwidth: bytes and reps must be positive");
  CopyBandwidth out;
  Status s = measure(bytes, reps, &out);
  if (!s) return s;
  return out;
}

}  // namespace amk::bench
