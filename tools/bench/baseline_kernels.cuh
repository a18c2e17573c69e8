// tools/bench/baseline_kernels.cuh: the small kernels of the cuBLAS baseline (everything that is
// not a GEMV). bf16 values are raw uint16_t converted with amk's own helpers (instructions/common/
// dtype.h: exact widening, round-to-nearest-even narrowing), and the norm / SiLU / argmax math is
// amk's AMK_HD functions, so the baseline rounds where amk rounds. pos and the token are read from
// device memory, which is what lets one captured graph serve every step.
#pragma once
#include "targets/gpu.h"

#include <math.h>

#include "instructions/common/dtype.h"
#include "instructions/rms_norm.h"
#include "instructions/sample_argmax.h"
#include "instructions/silu_mul.h"
#include "tools/bench/cublas_baseline.h"

namespace amk::bench::kernels {

using instructions::bf16_to_f32;
using instructions::f32_to_bf16;

constexpr int kNormThreads = 1024;   ///< one block per norm / argmax: a row is at most a few K
constexpr int kAttnWarps = 8;        ///< warps per attention block, each on a contiguous run of keys
constexpr int kAttnBlockKeys = 128;  ///< keys per attention block (one split of the window)
constexpr int kKeyBatch = 8;         ///< keys whose K and V rows a warp loads before reducing any
constexpr int kMaxPairsPerLane = static_cast<int>(kBaselineMaxHeadDim) / 2 / gpu::kWarpSize;
static_assert(kMaxPairsPerLane >= 1, "a lane holds at least one bf16 pair of a head");

/// h = embed[token] (a bf16 row copy, as amk's EMBED); one thread per element.
__global__ void embed_kernel(const uint16_t* table, const int32_t* d_token, uint16_t* h, int64_t hidden,
                             int64_t vocab) {
  const int32_t t = *d_token;
  if (t < 0 || t >= vocab) return;  // step() refuses such tokens; never read outside the table
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < hidden) h[i] = table[static_cast<int64_t>(t) * hidden + i];
}

/// y = bf16((x * rms_inv) * w) over one row of n; one block. y may be x (each thread rewrites only
/// the elements it read, after the reduction).
__global__ void rms_norm_kernel(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t n, float eps) {
  __shared__ float s_red[gpu::kMaxWarps];
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = bf16_to_f32(x[i]);
    ss += v * v;
  }
  const float inv = instructions::rms_inv(gpu::block_sum(ss, s_red), n, eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = f32_to_bf16(bf16_to_f32(x[i]) * inv * bf16_to_f32(w[i]));
}

/// RoPE (rotate-half: pairs (i, i + hd/2), angle = float(pos) * inv_freq[i] in fp32, accurate
/// cosf/sinf as amk's rope.cuh) on q in place and on k into K-cache row pos; v copied to V-cache
/// row pos. One thread per q pair, k pair or v element.
__global__ void rope_kv_kernel(uint16_t* q, const uint16_t* k, const uint16_t* v, const float* inv_freq,
                               const int32_t* d_pos, uint16_t* k_cache, uint16_t* v_cache, int64_t n_heads,
                               int64_t n_kv_heads, int64_t hd, int64_t max_seq) {
  const int32_t pos = *d_pos;
  if (pos < 0 || pos >= max_seq) return;  // step() refuses such positions
  const int64_t half = hd / 2, q_pairs = n_heads * half, k_pairs = n_kv_heads * half, kv_row = n_kv_heads * hd;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e < q_pairs + k_pairs) {
    const bool is_q = e < q_pairs;
    const int64_t p = is_q ? e : e - q_pairs, i = p % half, o = (p / half) * hd;
    const float ang = static_cast<float>(pos) * inv_freq[i];
    const float c = cosf(ang), s = sinf(ang);
    const uint16_t* src = is_q ? q : k;
    uint16_t* dst = is_q ? q : k_cache + pos * kv_row;
    const float x0 = bf16_to_f32(src[o + i]), x1 = bf16_to_f32(src[o + i + half]);  // both before writing
    dst[o + i] = f32_to_bf16(x0 * c - x1 * s);
    dst[o + i + half] = f32_to_bf16(x1 * c + x0 * s);
  } else if (e < q_pairs + k_pairs + kv_row) {
    const int64_t i = e - q_pairs - k_pairs;
    v_cache[pos * kv_row + i] = v[i];
  }
}

/// Flash-decoding split: block (head h, split s) attends q head h over keys [s*B, min((s+1)*B,
/// pos+1)) of KV head h / group. Each warp takes a contiguous run of those keys with an online
/// softmax in fp32, then the warps merge in shared memory into one partial {acc[hd], m, l}
/// (unnormalised, as amk's PARTIAL_WRITE). Splits past the window exit at once; the combine reads
/// only the splits that hold keys. A warp loads kKeyBatch keys' K and V rows before the first
/// shuffle reduction: one key at a time would serialise a DRAM latency per key (measured: ~30 us
/// per layer at 1K context on an H200, most of the step's attention time).
/// kPairs: bf16 pairs per lane (ceil(hd / 2 / kWarpSize)), a template so that small heads keep
/// few registers and more blocks fit on an SM.
template <int kPairs>
__global__ void __launch_bounds__(kAttnWarps* gpu::kWarpSize)
    attention_split_kernel(const uint16_t* q, const uint16_t* k_cache, const uint16_t* v_cache, const int32_t* d_pos,
                           float* partial, int64_t group, int64_t hd, int64_t kv_row, float scale, int64_t n_splits) {
  __shared__ float s_acc[kAttnWarps][kBaselineMaxHeadDim];
  __shared__ float s_m[kAttnWarps], s_l[kAttnWarps];
  const int64_t h = blockIdx.x, split = blockIdx.y, len = static_cast<int64_t>(*d_pos) + 1;
  const int64_t begin = split * kAttnBlockKeys;
  if (begin >= len) return;
  const int64_t end = begin + kAttnBlockKeys < len ? begin + kAttnBlockKeys : len;
  const int lane = gpu::lane_id(), w = gpu::warp_id();
  const int64_t pairs = hd / 2, kv_off = (h / group) * hd;
  const int64_t w_begin = begin + w * (kAttnBlockKeys / kAttnWarps);
  const int64_t w_end = w_begin + kAttnBlockKeys / kAttnWarps < end ? w_begin + kAttnBlockKeys / kAttnWarps : end;
  const auto lo = [](uint32_t u) { return bf16_to_f32(static_cast<uint16_t>(u & 0xffffu)); };
  const auto hi = [](uint32_t u) { return bf16_to_f32(static_cast<uint16_t>(u >> 16)); };
  // Lane owns the bf16 pairs p = lane + t * kWarpSize of the head (4-byte loads: hd is even).
  const uint32_t* q2 = reinterpret_cast<const uint32_t*>(q + h * hd);
  float qf[kPairs][2], acc[kPairs][2];
#pragma unroll
  for (int t = 0; t < kPairs; ++t) {
    const int64_t p = lane + t * gpu::kWarpSize;
    const uint32_t u = p < pairs ? q2[p] : 0u;
    qf[t][0] = lo(u);
    qf[t][1] = hi(u);
    acc[t][0] = acc[t][1] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = w_begin; j0 < w_end; j0 += kKeyBatch) {
    uint32_t kb[kKeyBatch][kPairs], vb[kKeyBatch][kPairs];
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u)
#pragma unroll
      for (int t = 0; t < kPairs; ++t) {
        const int64_t p = lane + t * gpu::kWarpSize, row = (j0 + u) * kv_row + kv_off;
        const bool ok = j0 + u < w_end && p < pairs;
        kb[u][t] = ok ? reinterpret_cast<const uint32_t*>(k_cache + row)[p] : 0u;
        vb[u][t] = ok ? reinterpret_cast<const uint32_t*>(v_cache + row)[p] : 0u;
      }
    float sc[kKeyBatch];
    float m_new = m;
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u) {
      float dot = 0.0f;
#pragma unroll
      for (int t = 0; t < kPairs; ++t) dot += qf[t][0] * lo(kb[u][t]) + qf[t][1] * hi(kb[u][t]);
      sc[u] = j0 + u < w_end ? scale * gpu::warp_sum(dot) : -INFINITY;  // the condition is warp-uniform
      m_new = fmaxf(m_new, sc[u]);
    }
    const float corr = expf(m - m_new);  // 0 on the warp's first batch (m = -inf; m_new is finite)
    l *= corr;
#pragma unroll
    for (int t = 0; t < kPairs; ++t) {
      acc[t][0] *= corr;
      acc[t][1] *= corr;
    }
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u) {
      const float pj = expf(sc[u] - m_new);  // 0 for the keys past w_end
      l += pj;
#pragma unroll
      for (int t = 0; t < kPairs; ++t) {
        acc[t][0] += pj * lo(vb[u][t]);
        acc[t][1] += pj * hi(vb[u][t]);
      }
    }
    m = m_new;
  }
  if (lane == 0) {
    s_m[w] = m;
    s_l[w] = l;
  }
#pragma unroll
  for (int t = 0; t < kPairs; ++t) {
    const int64_t p = lane + t * gpu::kWarpSize;
    if (p < pairs) {
      s_acc[w][2 * p] = acc[t][0];
      s_acc[w][2 * p + 1] = acc[t][1];
    }
  }
  gpu::block_barrier();
  // Warp 0 always holds key `begin`, so M is finite; a warp with no key has m = -inf, l = acc = 0.
  float M = s_m[0];
  for (int i = 1; i < kAttnWarps; ++i) M = fmaxf(M, s_m[i]);
  float* out = partial + (h * n_splits + split) * (hd + 2);
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float a = 0.0f;
    for (int i = 0; i < kAttnWarps; ++i) a += s_acc[i][d] * expf(s_m[i] - M);
    out[d] = a;
  }
  if (threadIdx.x == 0) {
    float L = 0.0f;
    for (int i = 0; i < kAttnWarps; ++i) L += s_l[i] * expf(s_m[i] - M);
    out[hd] = M;
    out[hd + 1] = L;
  }
}

/// out[h] = bf16(sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s) over the splits holding keys;
/// one block per head.
__global__ void attention_combine_kernel(const float* partial, const int32_t* d_pos, uint16_t* out, int64_t hd,
                                         int64_t n_splits) {
  const int64_t h = blockIdx.x, len = static_cast<int64_t>(*d_pos) + 1;
  const int64_t used = (len + kAttnBlockKeys - 1) / kAttnBlockKeys, stride = hd + 2;
  const float* base = partial + h * n_splits * stride;
  float M = -INFINITY;
  for (int64_t s = 0; s < used; ++s) M = fmaxf(M, base[s * stride + hd]);
  float L = 0.0f;
  for (int64_t s = 0; s < used; ++s) L += base[s * stride + hd + 1] * expf(base[s * stride + hd] - M);
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float a = 0.0f;
    for (int64_t s = 0; s < used; ++s) a += base[s * stride + d] * expf(base[s * stride + hd] - M);
    out[h * hd + d] = f32_to_bf16(L > 0.0f ? a / L : 0.0f);
  }
}

/// y = bf16(silu(gate) * up), one thread per element (amk's silu_mul()).
__global__ void silu_mul_kernel(const uint16_t* gate, const uint16_t* up, uint16_t* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = f32_to_bf16(instructions::silu_mul(bf16_to_f32(gate[i]), bf16_to_f32(up[i])));
}

/// *d_out = argmax of logits[0..n) with amk's argmax_better (larger, then lower index; NaN never
/// wins; all-NaN gives 0); one block. (NaN, n) is the identity of the reduction.
__global__ void argmax_kernel(const float* logits, int64_t n, int32_t* d_out) {
  __shared__ float s_v[gpu::kMaxWarps];
  __shared__ int64_t s_i[gpu::kMaxWarps];
  float bv = instructions::f32_from_bits(0x7fc00000u);
  int64_t bi = n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (instructions::argmax_better(logits[i], i, bv, bi)) {
      bv = logits[i];
      bi = i;
    }
  for (int mask = gpu::kWarpSize / 2; mask >= 1; mask >>= 1) {
    const float ov = gpu::shfl_xor(bv, mask);
    const int64_t oi = gpu::shfl_xor(static_cast<int>(bi), mask);  // n <= INT32_MAX (checked on the host)
    if (instructions::argmax_better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (gpu::lane_id() == 0) {
    s_v[gpu::warp_id()] = bv;
    s_i[gpu::warp_id()] = bi;
  }
  gpu::block_barrier();
  if (threadIdx.x == 0) {
    for (int i = 1; i < gpu::warp_count(); ++i)
      if (instructions::argmax_better(s_v[i], s_i[i], s_v[0], s_i[0])) {
        s_v[0] = s_v[i];
        s_i[0] = s_i[i];
      }
    *d_out = static_cast<int32_t>(s_i[0] == n ? 0 : s_i[0]);
  }
}

}  // namespace amk::bench::kernels
