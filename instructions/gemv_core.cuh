// instructions/gemv_core.cuh: the block-cooperative GEMV tile every weight-streaming op shares
// (GEMV_TILE, GEMM_TILE, the FUSED recipes, the LM head). Bandwidth first: each warp owns kRows
// weight rows at a time and streams them with 16-byte loads, kUnroll per row in flight per lane
// (kRows * kUnroll * 16 B per lane, 64 KiB per 512-thread block), accumulating in fp32 against
// the x row staged once in shared memory (after the recipe's prologue: rmsnorm or silu*up, kept
// fp32). K larger than the shared-memory scratch is streamed in chunks. Rows that are not
// 16-byte aligned (odd K, strided views) take a scalar path. One cast per output element.
#pragma once
#include "instructions/device_common.cuh"
#include "instructions/common/matmul.h"
#include "instructions/gemv_like.h"
#include "instructions/rms_norm.h"
#include "instructions/silu_mul.h"
#include "instructions/vec8.cuh"

namespace amk::instructions {

/// The planar layout of a staged x of `len` floats (len a multiple of 8), for 2-byte weights on
/// the weight stream: the first four of every eight elements in one plane, the last four in the
/// other, so the x values of 16-byte weight vector v are the float4s lo[v] and hi[v]. Lanes on
/// consecutive vectors then read consecutive 16 bytes of each plane: no bank conflicts, and no
/// per-load swizzle arithmetic (gemv_load_x16's costs two dozen instructions per x vector).
AMK_HD int64_t x_planar_at(int64_t k, int64_t len) {
  return (k % 8 < 4 ? 0 : len / 2) + k / 8 * 4 + k % 4;
}

/// Whether a streamed task's staged x is planar: for 2-byte weights, whose 16-byte vectors meet
/// 8 x values (an F32 vector meets 4 consecutive ones).
AMK_HD constexpr bool stream_x_planar(int32_t weight_dtype) { return weight_dtype != AMK_DTYPE_F32; }

/// Store elements [k, k + 8) of a staged x (k a multiple of 8, s_x 16-byte aligned): in element
/// order, or planar (x_planar_at). 16-byte stores either way.
AMK_DEVICE void store_x8(float* s_x, int64_t k, int64_t len, bool planar, const float (&v)[8]) {
  float* lo = planar ? s_x + k / 2 : s_x + k;
  float* hi = planar ? s_x + len / 2 + k / 2 : s_x + k + 4;
  *reinterpret_cast<float4*>(lo) = make_float4(v[0], v[1], v[2], v[3]);
  *reinterpret_cast<float4*>(hi) = make_float4(v[4], v[5], v[6], v[7]);
}

/// The staged fp32 x values one 16-byte weight vector meets (4 for F32, 8 for BF16 / F16) from
/// shared memory at `xs` (16-byte aligned). Eight floats are 32 bytes: with lanes 32 bytes apart,
/// each 8-lane phase of a 16-byte shared load would hit every bank it touches twice. So a lane
/// whose x sits in the upper 128 bytes of a 256-byte run (address bit 7) loads its upper half
/// first: both loads are then conflict-free (eight consecutive vectors cover 256 bytes, four of
/// them with bit 7 set). Values come out in element order either way.
template <int DT>
AMK_DEVICE void gemv_load_x16(const float* xs, float (&xv)[DT == AMK_DTYPE_F32 ? 4 : 8]) {
  if constexpr (DT == AMK_DTYPE_F32) {
    const float4 x = *reinterpret_cast<const float4*>(xs);
    xv[0] = x.x, xv[1] = x.y, xv[2] = x.z, xv[3] = x.w;
  } else {
    const bool upper_first = ((reinterpret_cast<uintptr_t>(xs) >> 7) & 1u) != 0;
    const float4 first = *reinterpret_cast<const float4*>(xs + (upper_first ? 4 : 0));
    const float4 second = *reinterpret_cast<const float4*>(xs + (upper_first ? 0 : 4));
    const float4 lo = upper_first ? second : first, hi = upper_first ? first : second;
    xv[0] = lo.x, xv[1] = lo.y, xv[2] = lo.z, xv[3] = lo.w;
    xv[4] = hi.x, xv[5] = hi.y, xv[6] = hi.z, xv[7] = hi.w;
  }
}

/// The two 2-byte elements of one 32-bit word of a BF16 / F16 weight vector, as floats (element
/// order: the low half first).
template <int DT>
AMK_DEVICE void unpack_pair(uint32_t u, float& lo, float& hi) {
  static_assert(DT == AMK_DTYPE_BF16 || DT == AMK_DTYPE_F16, "2-byte weights");
  if constexpr (DT == AMK_DTYPE_BF16) {
    lo = __uint_as_float(u << 16);
    hi = __uint_as_float(u & 0xffff0000u);
  } else {
    lo = gpu::half_bits_to_float(static_cast<uint16_t>(u & 0xffffu));
    hi = gpu::half_bits_to_float(static_cast<uint16_t>(u >> 16));
  }
}

/// acc_even / acc_odd + the dot of one 16-byte weight vector with its x values: the products of
/// even and odd elements go to two accumulators, so a row's chain of dependent FMAs is half as
/// long (one warp on one row waited 4 cycles per FMA). Given the same float twice it adds the
/// products in element order (gemv_dot16).
template <int DT>
AMK_DEVICE void gemv_dot16_pair(uint4 w, const float (&xv)[DT == AMK_DTYPE_F32 ? 4 : 8], float& acc_even,
                                float& acc_odd) {
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
  if constexpr (DT == AMK_DTYPE_F32) {
    acc_even = fmaf(__uint_as_float(u[0]), xv[0], acc_even);
    acc_odd = fmaf(__uint_as_float(u[1]), xv[1], acc_odd);
    acc_even = fmaf(__uint_as_float(u[2]), xv[2], acc_even);
    acc_odd = fmaf(__uint_as_float(u[3]), xv[3], acc_odd);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      unpack_pair<DT>(u[i], lo, hi);
      acc_even = fmaf(lo, xv[2 * i], acc_even);
      acc_odd = fmaf(hi, xv[2 * i + 1], acc_odd);
    }
  }
}

/// acc + the fp32 dot of one 16-byte weight vector with its x values (gemv_load_x16): one
/// accumulator, so the products are added in element order.
template <int DT>
AMK_DEVICE float gemv_dot16(uint4 w, const float (&xv)[DT == AMK_DTYPE_F32 ? 4 : 8], float acc) {
  gemv_dot16_pair<DT>(w, xv, acc, acc);
  return acc;
}

/// The elements of one 16-byte vector as floats (4 for F32, 8 for BF16 / F16).
template <int DT>
AMK_DEVICE void unpack16(uint4 w, float (&out)[DT == AMK_DTYPE_F32 ? 4 : 8]) {
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
  if constexpr (DT == AMK_DTYPE_F32) {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = __uint_as_float(u[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (DT == AMK_DTYPE_BF16) {
        out[2 * i] = __uint_as_float(u[i] << 16);
        out[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
      } else {
        out[2 * i] = gpu::half_bits_to_float(static_cast<uint16_t>(u[i] & 0xffffu));
        out[2 * i + 1] = gpu::half_bits_to_float(static_cast<uint16_t>(u[i] >> 16));
      }
    }
  }
}

/// One warp: acc[r] += W_row_r[chunk] . s_x[chunk] over `nvec` 16-byte vectors per row, the rows
/// in global memory (streamed through the non-coherent path). Rows in the shared-memory weight
/// ring take gemv_stream_item (gemv_stream.cuh) instead.
template <int DT, int R, int U>
AMK_DEVICE void gemv_chunk_vec(const char* const (&rows)[R], const float* s_x, int64_t nvec, float (&acc)[R]) {
  constexpr int kEpv = DT == AMK_DTYPE_F32 ? 4 : 8;  // elements per 16-byte vector
  for (int64_t v0 = gpu::lane_id(); v0 < nvec; v0 += static_cast<int64_t>(gpu::kWarpSize) * U) {
    uint4 w[R][U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t idx = v0 + static_cast<int64_t>(u) * gpu::kWarpSize;
#pragma unroll
      for (int r = 0; r < R; ++r)
        w[r][u] = idx >= nvec ? make_uint4(0u, 0u, 0u, 0u) : gpu::load_stream16(rows[r] + idx * 16);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t idx = v0 + static_cast<int64_t>(u) * gpu::kWarpSize;
      if (idx < nvec) {
        float xv[kEpv];  // loaded once for all R rows
        gemv_load_x16<DT>(s_x + idx * kEpv, xv);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = gemv_dot16<DT>(w[r][u], xv, acc[r]);
      }
    }
  }
}

/// One warp, any layout: acc[r] += sum_k W.load(base[r] + k) * s_x[k] for k < len.
template <int R>
AMK_DEVICE void gemv_chunk_scalar(const Tensor& w, const int64_t (&base)[R], const float* s_x, int64_t len,
                                  float (&acc)[R]) {
  for (int64_t k = gpu::lane_id(); k < len; k += gpu::kWarpSize) {
    const float x = s_x[k];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = fmaf(w.load(base[r] + k), x, acc[r]);
  }
}

/// 1 / rms(x[r, :K]) for the RMSNORM prologue. Whole block (a block reduction).
AMK_DEVICE float gemv_rms_scale(const MatmulArgs& mm, int64_t r, float eps, const DeviceCtx& ctx) {
  const int64_t K = mm.K;
  float ss = 0.0f;
  if (vec8_ok(mm.x, r * K, K)) {  // 8 at a time: one round trip per 8 * threads elements
    for (int64_t k = block_tid() * 8; k < K; k += block_threads() * 8) {
      float v[8];
      load8(mm.x, r * K + k, v);
#pragma unroll
      for (int j = 0; j < 8; ++j) ss = fmaf(v[j], v[j], ss);
    }
  } else {
    for (int64_t k = block_tid(); k < K; k += block_threads()) {
      const float v = mm.x.load(r * K + k);
      ss = fmaf(v, v, ss);
    }
  }
  return rms_inv(compute_sum(ss, ctx.s_red), K, eps);
}

/// s_x[k] = prologue(x[r, c0 + k]) for k < len (fp32; RMSNORM multiplies by `scale` and norm_w).
/// Whole block; the caller synchronises before (s_x free) and after (s_x complete).
AMK_DEVICE void gemv_stage_x(const MatmulArgs& mm, int32_t prologue, const Tensor& aux, float scale, int64_t r,
                             int64_t c0, int64_t len, float* s_x, bool planar = false) {
  const int64_t K = mm.K;
  const int64_t aux_at = prologue == kGemvRmsNorm ? c0 : r * K + c0;
  if (vec8_ok(mm.x, r * K + c0, len) && (prologue == kGemvPlain || vec8_ok(aux, aux_at, len))) {
    for (int64_t k = block_tid() * 8; k < len; k += block_threads() * 8) {
      float v[8], a[8];
      load8(mm.x, r * K + c0 + k, v);
      if (prologue != kGemvPlain) load8(aux, aux_at + k, a);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (prologue == kGemvRmsNorm) v[j] = v[j] * scale * a[j];
        else if (prologue == kGemvSiluMul) v[j] = silu_mul_fast(v[j], a[j]);
      }
      store_x8(s_x, k, len, planar, v);
    }
  } else {
    for (int64_t k = block_tid(); k < len; k += block_threads()) {
      float v = mm.x.load(r * K + c0 + k);
      if (prologue == kGemvRmsNorm) v = v * scale * aux.load(c0 + k);
      else if (prologue == kGemvSiluMul) v = silu_mul_fast(v, aux.load(r * K + c0 + k));
      s_x[planar ? x_planar_at(k, len) : k] = v;
    }
  }
}

/// The tile of `mm` for every row in [m_begin, m_end): y = prologue(x) . W[n] (+ bias[n])
/// (+ residual[r, n]), also stored into `copy` when given (GEMV_ADD_COPY). `aux` is norm_w
/// (kGemvRmsNorm) or up (kGemvSiluMul). Whole block.
AMK_DEVICE int32_t gemv_tile_block(const MatmulArgs& mm, int32_t prologue, const Tensor& aux, float eps,
                                   const Tensor* bias, const Tensor* residual, const DeviceCtx& ctx,
                                   const Tensor* copy = nullptr, const StepGemv* rotate = nullptr) {
  constexpr int R = 2;  // rows per warp: a rotated pair (n, n + 1) is one warp's, n even
  static_assert(R == 2, "step_gemv_rotate pairs a warp's two rows");
  constexpr int U = 4;  // 16-byte loads per row in flight per lane
  const int64_t K = mm.K;
  const int64_t cap = static_cast<int64_t>(ctx.work_floats) & ~int64_t{7};
  if (cap < 8) return AMK_DEVERR_BAD_PARAMS;
  const int64_t chunk = K < cap ? K : cap;  // a multiple of 8 unless it is all of K
  const int64_t n_chunks = (K + chunk - 1) / chunk;
  const int32_t wdt = mm.w.dtype;
  const int64_t esize = dtype_bits(wdt) / 8;
  const bool vec = mm.w.contiguous && (K * esize) % 16 == 0 && (reinterpret_cast<uintptr_t>(mm.w.ptr) & 15u) == 0;
  const char* wbase = static_cast<const char*>(mm.w.ptr);
  const int warp = gpu::warp_id(), lane = gpu::lane_id();
  const int64_t batch = static_cast<int64_t>(compute_warps()) * R;
  float* s_x = ctx.s_work;  // [chunk] fp32

  for (int64_t r = mm.m_begin; r < mm.m_end; ++r) {
    const float scale = prologue == kGemvRmsNorm ? gemv_rms_scale(mm, r, eps, ctx) : 1.0f;
    int64_t staged = -1;
    for (int64_t n0 = mm.n_begin; n0 < mm.n_end; n0 += batch) {
      int64_t n[R];
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int64_t want = n0 + static_cast<int64_t>(warp) * R + i;
        n[i] = want < mm.n_end ? want : mm.n_end - 1;  // clamp: duplicate work, no divergence
      }
      float acc[R];
#pragma unroll
      for (int i = 0; i < R; ++i) acc[i] = 0.0f;
      for (int64_t c = 0; c < n_chunks; ++c) {
        const int64_t c0 = c * chunk;
        const int64_t len = K - c0 < chunk ? K - c0 : chunk;
        if (c != staged) {  // uniform: every warp walks the same batches and chunks
          compute_barrier();
          gemv_stage_x(mm, prologue, aux, scale, r, c0, len, s_x);
          compute_barrier();
          staged = c;
        }
        if (vec) {
          const char* rows[R];
#pragma unroll
          for (int i = 0; i < R; ++i) rows[i] = wbase + (n[i] * K + c0) * esize;
          const int64_t nvec = len * esize / 16;
          if (wdt == AMK_DTYPE_BF16) gemv_chunk_vec<AMK_DTYPE_BF16, R, U>(rows, s_x, nvec, acc);
          else if (wdt == AMK_DTYPE_F16) gemv_chunk_vec<AMK_DTYPE_F16, R, U>(rows, s_x, nvec, acc);
          else gemv_chunk_vec<AMK_DTYPE_F32, R, U>(rows, s_x, nvec, acc);
        } else {
          int64_t base[R];
#pragma unroll
          for (int i = 0; i < R; ++i) base[i] = n[i] * K + c0;
          gemv_chunk_scalar<R>(mm.w, base, s_x, len, acc);
        }
      }
#pragma unroll
      for (int i = 0; i < R; ++i) acc[i] = gpu::warp_sum(acc[i]);
      if (lane == 0) {
        // The tile's start and width are even (decode_step_gemv_static), so n[0] is even and
        // n[1] = n[0] + 1 is in the tile whenever n[0] is.
        if (rotate != nullptr && rotate->inv_freq != nullptr) step_gemv_rotate(*rotate, n[0], &acc[0], &acc[1]);
#pragma unroll
        for (int i = 0; i < R; ++i) {
          if (n0 + static_cast<int64_t>(warp) * R + i >= mm.n_end) continue;
          const int64_t idx = r * mm.n_out + n[i];
          float v = acc[i];
          if (bias != nullptr) v = v + bias->load(n[i]);
          if (residual != nullptr) v = v + residual->load(idx);
          mm.y.store(idx, v);
          if (copy != nullptr) copy->store(idx, v);
        }
      }
    }
  }
  return AMK_DEVERR_NONE;
}

}  // namespace amk::instructions
