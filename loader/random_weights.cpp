// loader/random_weights.cpp: seeded random weights, fast enough for full-size models.
// The tensor is cut into fixed chunks, each with its own splitmix64 stream keyed by (seed, key,
// chunk), so the values do not depend on how many threads fill it. Normals come from the
// Marsaglia polar method (no trigonometry); each chunk is generated as floats and converted once.
#include "loader/random_weights.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>
#include <vector>

#include "loader/dtype_cast.h"

namespace amk::loader {
namespace {

/// Elements per chunk: even, so I4 chunks start on a byte boundary and threads touch disjoint bytes.
constexpr int64_t kChunk = int64_t{1} << 16;
/// Below this many elements, one thread fills the buffer.
constexpr int64_t kParallelMin = int64_t{1} << 20;

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  double symmetric() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }
  /// Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

bool is_float(ir::DType d) {
  return d == ir::DType::F32 || d == ir::DType::F16 || d == ir::DType::BF16 || d == ir::DType::F8E4M3 ||
         d == ir::DType::F8E5M2;
}

// A key's value goes where `buffer id + 1` always went, so id-keyed values are unchanged.
SplitMix64 chunk_stream(uint64_t seed, RandomKey k, int64_t chunk) {
  SplitMix64 key{seed ^ (0x5851f42d4c957f2dull * k.value)};
  SplitMix64 rng{key.next() ^ (0xd1342543de82ef95ull * (static_cast<uint64_t>(chunk) + 1))};
  rng.next();
  return rng;
}

/// What random_fill_tensor fills.
struct Tensor {
  ir::DType dtype;
  const std::vector<int64_t>& shape;
  RandomKey key;
};

/// Fill elements [begin, end) of `tensor` at `dst`.
void fill_range(const Tensor& tensor, uint64_t seed, void* dst, int64_t begin, int64_t end) {
  std::vector<float> values(static_cast<size_t>(kChunk));
  const bool matrix = tensor.shape.size() >= 2;
  const double std = matrix ? 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(tensor.shape.back(), 1))) : 0.1;
  const double mean = matrix ? 0.0 : 1.0;
  int64_t lo = 0, hi = 1;  // integer dtypes (BOOL by default)
  switch (tensor.dtype) {
    case ir::DType::I8: lo = -127, hi = 127; break;
    case ir::DType::I4: lo = -8, hi = 7; break;
    case ir::DType::U8: lo = 0, hi = 255; break;
    case ir::DType::I32: lo = 0, hi = 15; break;
    default: break;
  }
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
    const int64_t n = std::min(kChunk, end - c0);
    SplitMix64 rng = chunk_stream(seed, tensor.key, c0 / kChunk);
    if (is_float(tensor.dtype)) {
      for (int64_t i = 0; i < n; i += 2) {
        double u, v, s;
        do {
          u = rng.symmetric();
          v = rng.symmetric();
          s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        const double m = std * std::sqrt(-2.0 * std::log(s) / s);
        values[static_cast<size_t>(i)] = static_cast<float>(mean + u * m);
        if (i + 1 < n) values[static_cast<size_t>(i + 1)] = static_cast<float>(mean + v * m);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<float>(rng.range(lo, hi));
    }
    dtype_store_array(tensor.dtype, dst, c0, values.data(), n);
  }
}

}  // namespace

RandomKey random_key_of(const ir::Buffer& buffer) {
  return RandomKey{static_cast<uint64_t>(static_cast<int64_t>(buffer.id.value) + 1)};
}

RandomKey random_key_of_source(const ir::Program& program, std::string_view source) {
  auto of_source = [&](const ir::Buffer& b) {
    return (b.kind == ir::BufferKind::Weight || b.kind == ir::BufferKind::Const) && b.source && *b.source == source;
  };
  // A buffer in the file's row order first; else a permuted one (rope_pairs), whose unpermuted
  // values are then what a stack part or another permuted buffer of the source shares.
  for (const ir::Buffer& b : program.buffers)
    if (of_source(b) && !b.rope_permuted()) return random_key_of(b);
  for (const ir::Buffer& b : program.buffers)
    if (of_source(b)) return random_key_of(b);
  // FNV-1a of the name with the top bit set: ids + 1 stay below 2^32, so the two never meet.
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : source) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return RandomKey{h | (uint64_t{1} << 63)};
}

void random_fill(const ir::Buffer& buffer, uint64_t seed, void* dst) {
  random_fill_tensor(buffer.dtype, buffer.shape, random_key_of(buffer), seed, dst);
}

void random_fill_tensor(ir::DType dtype, const std::vector<int64_t>& shape, RandomKey key, uint64_t seed, void* dst) {
  const Tensor tensor{dtype, shape, key};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int64_t threads = n < kParallelMin ? 1
                                           : std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    fill_range(tensor, seed, dst, 0, n);
    return;
  }
  // Whole chunks per thread, so every chunk is generated by exactly one stream.
  const int64_t per = (chunks + threads - 1) / threads * kChunk;
  std::vector<std::thread> pool;
  int64_t started = 0;  // elements handed to threads
  try {
    for (int64_t t = 0; t < threads && started < n; ++t) {
      pool.emplace_back(fill_range, std::cref(tensor), seed, dst, started, std::min(n, started + per));
      started = std::min(n, started + per);
    }
  } catch (const std::system_error&) {
    // No more threads: this thread fills what is left below.
  }
  fill_range(tensor, seed, dst, started, n);
  for (std::thread& th : pool) th.join();
}

}  // namespace amk::loader
