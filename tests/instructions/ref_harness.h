// tests/instructions/ref_harness.h: builds an amk_program_t over std::vector-backed buffers for the
// CPU reference tests, with canary bytes after every buffer (out-of-bounds writes are caught), and
// conversions written independently of instructions/common/dtype.h: the tests decode outputs with
// these and compute expected values in double precision, never through the code under test.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "instructions/cpu_dispatch.h"
#include "vm/abi.h"

namespace amk::test {

// ---- independent scalar conversions -----------------------------------------------------------

/// Value of a bf16 bit pattern (the top half of an IEEE binary32).
inline double bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Value of an IEEE binary16 bit pattern, from its fields.
inline double f16_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::nan("") : s * INFINITY;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

/// bf16 bits of v, which must be exactly representable (REQUIREd).
inline uint16_t bf16_exact(double v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  REQUIRE((u & 0xffffu) == 0u);
  return static_cast<uint16_t>(u >> 16);
}

/// binary16 bits of v, which must be exactly representable (REQUIREd).
inline uint16_t f16_exact(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {  // subnormal or zero
    const double m = a * std::ldexp(1.0, 24);
    REQUIRE(m == std::floor(m));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  int ex;
  const double fr = std::frexp(a, &ex);  // a = fr * 2^ex, fr in [0.5, 1)
  const double mant = (2.0 * fr - 1.0) * 1024.0;
  REQUIRE(mant == std::floor(mant));
  REQUIRE(ex - 1 + 15 >= 1);
  REQUIRE(ex - 1 + 15 <= 30);
  return static_cast<uint16_t>(sign | ((ex - 1 + 15) << 10) | static_cast<uint16_t>(mant));
}

/// One unit in the last place of a bf16 / f16 value of magnitude |x| (x != 0).
inline double bf16_ulp(double x) { return std::ldexp(1.0, std::ilogb(x == 0 ? 1e-38 : x) - 7); }
inline double f16_ulp(double x) {
  const int e = x == 0 ? -14 : std::ilogb(x);
  return std::ldexp(1.0, (e < -14 ? -14 : e) - 10);
}

/// Round v to `bits` significant bits (so it is exact in bf16: 8, f16: 11, f32: 24).
inline double round_sig(double v, int bits) {
  if (v == 0) return 0;
  int ex;
  const double fr = std::frexp(v, &ex);
  return std::ldexp(std::nearbyint(std::ldexp(fr, bits)), ex - bits);
}

/// n seeded uniform values in [lo, hi), exactly representable in `dtype`.
inline std::vector<double> random_values(size_t n, uint32_t seed, int32_t dtype, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) {
    x = dist(rng);
    if (dtype == AMK_DTYPE_BF16) x = round_sig(x, 8);
    if (dtype == AMK_DTYPE_F16) x = std::fabs(x) < 1.0 / 8192 ? 0.0 : round_sig(x, 11);
    if (dtype == AMK_DTYPE_F32) x = static_cast<float>(x);
  }
  return v;
}

// ---- the program under test ---------------------------------------------------------------------

constexpr uint8_t kPoison = 0xa5;  ///< fill byte of outputs that must stay untouched
constexpr uint8_t kCanary = 0xcd;  ///< fill byte after every buffer
constexpr size_t kGuard = 64;

/// A small program: buffers, one step block, and cpu_execute() on one instruction at a time.
class RefProgram {
 public:
  /// Add a dense buffer of `shape` holding `values` (flat, each exact in dtype; empty = zeros).
  int32_t add(int32_t dtype, std::vector<int64_t> shape, const std::vector<double>& values = {}) {
    std::vector<int64_t> stride(shape.size());
    int64_t s = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      stride[d] = s;
      s *= shape[d];
    }
    return add_strided(dtype, shape, stride, values);
  }

  /// Add a buffer with explicit element strides; logical element i lands at its strided offset.
  int32_t add_strided(int32_t dtype, std::vector<int64_t> shape, std::vector<int64_t> stride,
                      const std::vector<double>& values = {}) {
    Buffer b;
    b.dtype = dtype;
    b.shape = shape;
    b.stride = stride;
    b.numel = 1;
    int64_t extent = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      b.numel *= shape[d];
      extent += (shape[d] - 1) * stride[d];
    }
    const int64_t bytes = (extent * bits(dtype) + 7) / 8;
    b.data.assign(static_cast<size_t>(bytes) + kGuard, 0);
    std::memset(b.data.data() + bytes, kCanary, kGuard);
    b.bytes = static_cast<size_t>(bytes);
    bufs_.push_back(std::move(b));
    const int32_t idx = static_cast<int32_t>(bufs_.size() - 1);
    for (size_t i = 0; i < values.size(); ++i) set(idx, static_cast<int64_t>(i), values[i]);
    return idx;
  }

  /// Fill the payload of buffer idx with kPoison.
  void poison(int32_t idx) { std::memset(bufs_[idx].data.data(), kPoison, bufs_[idx].bytes); }
  /// True when every payload byte is still kPoison.
  bool poisoned(int32_t idx) const {
    for (size_t i = 0; i < bufs_[idx].bytes; ++i)
      if (bufs_[idx].data[i] != kPoison) return false;
    return true;
  }
  /// True when no buffer's guard bytes were overwritten.
  bool guards_intact() const {
    for (const auto& b : bufs_)
      for (size_t i = b.bytes; i < b.data.size(); ++i)
        if (b.data[i] != kCanary) return false;
    return true;
  }

  /// Set logical element i of buffer idx (v exact in its dtype, or NaN for float dtypes).
  void set(int32_t idx, int64_t i, double v) {
    Buffer& b = bufs_[idx];
    const int64_t o = offset(b, i);
    uint8_t* p = b.data.data();
    if (std::isnan(v)) {  // a quiet NaN of the dtype
      const uint32_t f = 0x7fc00000u;
      const uint16_t h = b.dtype == AMK_DTYPE_F16 ? 0x7e00 : 0x7fc0;
      REQUIRE((b.dtype == AMK_DTYPE_F32 || b.dtype == AMK_DTYPE_BF16 || b.dtype == AMK_DTYPE_F16));
      if (b.dtype == AMK_DTYPE_F32) std::memcpy(p + 4 * o, &f, 4);
      else std::memcpy(p + 2 * o, &h, 2);
      return;
    }
    switch (b.dtype) {
      case AMK_DTYPE_F32: { const float f = static_cast<float>(v); REQUIRE(double(f) == v); std::memcpy(p + 4 * o, &f, 4); break; }
      case AMK_DTYPE_BF16: { const uint16_t h = bf16_exact(v); std::memcpy(p + 2 * o, &h, 2); break; }
      case AMK_DTYPE_F16: { const uint16_t h = f16_exact(v); std::memcpy(p + 2 * o, &h, 2); break; }
      case AMK_DTYPE_I32: { const int32_t x = static_cast<int32_t>(v); REQUIRE(double(x) == v); std::memcpy(p + 4 * o, &x, 4); break; }
      case AMK_DTYPE_I8: { const int8_t x = static_cast<int8_t>(v); REQUIRE(double(x) == v); std::memcpy(p + o, &x, 1); break; }
      case AMK_DTYPE_U8: { const uint8_t x = static_cast<uint8_t>(v); REQUIRE(double(x) == v); p[o] = x; break; }
      case AMK_DTYPE_I4: {
        REQUIRE((v >= -8 && v <= 7 && v == std::floor(v)));
        const uint8_t nib = static_cast<uint8_t>(static_cast<int>(v) & 0xf);
        uint8_t& byte = p[o / 2];
        byte = (o % 2) ? static_cast<uint8_t>((byte & 0x0f) | (nib << 4)) : static_cast<uint8_t>((byte & 0xf0) | nib);
        break;
      }
      default: FAIL("dtype not supported by the harness");
    }
  }
  /// Logical element i of buffer idx, decoded independently of the library.
  double get(int32_t idx, int64_t i) const {
    const Buffer& b = bufs_[idx];
    const int64_t o = offset(b, i);
    const uint8_t* p = b.data.data();
    uint16_t h;
    switch (b.dtype) {
      case AMK_DTYPE_F32: { float f; std::memcpy(&f, p + 4 * o, 4); return f; }
      case AMK_DTYPE_BF16: std::memcpy(&h, p + 2 * o, 2); return bf16_value(h);
      case AMK_DTYPE_F16: std::memcpy(&h, p + 2 * o, 2); return f16_value(h);
      case AMK_DTYPE_I32: { int32_t x; std::memcpy(&x, p + 4 * o, 4); return x; }
      case AMK_DTYPE_I8: return static_cast<int8_t>(p[o]);
      case AMK_DTYPE_U8: return p[o];
      case AMK_DTYPE_I4: { const int nib = (o % 2) ? p[o / 2] >> 4 : p[o / 2] & 0xf; return nib >= 8 ? nib - 16 : nib; }
      default: FAIL("dtype not supported by the harness"); return 0;
    }
  }
  /// All logical elements of buffer idx.
  std::vector<double> values(int32_t idx) const {
    std::vector<double> v(static_cast<size_t>(bufs_[idx].numel));
    for (size_t i = 0; i < v.size(); ++i) v[i] = get(idx, static_cast<int64_t>(i));
    return v;
  }
  /// Raw bits of a 16-bit element (bf16 / f16 rounding checks).
  uint16_t bits16(int32_t idx, int64_t i) const {
    uint16_t h;
    std::memcpy(&h, bufs_[idx].data.data() + 2 * offset(bufs_[idx], i), 2);
    return h;
  }

  /// Set the step position (a null step block when never called).
  void set_step(int32_t pos) {
    step_.pos = pos;
    step_.epoch = 1;
    has_step_ = true;
  }

  /// Run one instruction through cpu_execute over this program's buffers.
  int32_t run(const amk_instruction_t& inst) { return instructions::cpu_execute(view(), inst); }

  /// The program as the VM sees it: its buffer table and step block (valid until the next add,
  /// view or run).
  const amk_program_t& view() {
    descs_.assign(bufs_.size(), amk_buffer_t{});
    for (size_t i = 0; i < bufs_.size(); ++i) {
      amk_buffer_t& d = descs_[i];
      d.ptr = bufs_[i].data.data();
      d.numel = bufs_[i].numel;
      d.rank = static_cast<int32_t>(bufs_[i].shape.size());
      d.dtype = bufs_[i].dtype;
      for (size_t k = 0; k < bufs_[i].shape.size(); ++k) {
        d.shape[k] = bufs_[i].shape[k];
        d.stride[k] = bufs_[i].stride[k];
      }
    }
    prog_ = amk_program_t{};
    prog_.buffers = descs_.data();
    prog_.n_buffers = static_cast<int32_t>(descs_.size());
    prog_.step = has_step_ ? &step_ : nullptr;
    return prog_;
  }

 private:
  struct Buffer {
    int32_t dtype = 0;
    std::vector<int64_t> shape, stride;
    int64_t numel = 0;
    size_t bytes = 0;
    std::vector<uint8_t> data;
  };
  static int64_t bits(int32_t dtype) {
    switch (dtype) {
      case AMK_DTYPE_F32: case AMK_DTYPE_I32: return 32;
      case AMK_DTYPE_F16: case AMK_DTYPE_BF16: return 16;
      case AMK_DTYPE_I4: return 4;
      default: return 8;
    }
  }
  static int64_t offset(const Buffer& b, int64_t i) {
    int64_t o = 0;
    for (size_t d = b.shape.size(); d-- > 0;) {
      o += (i % b.shape[d]) * b.stride[d];
      i /= b.shape[d];
    }
    return o;
  }
  std::vector<Buffer> bufs_;
  std::vector<amk_buffer_t> descs_;
  amk_program_t prog_{};
  amk_step_t step_{};
  bool has_step_ = false;
};

/// An instruction with the given opcode, inputs and outputs; params zeroed.
inline amk_instruction_t make_inst(int32_t op, std::vector<int32_t> ins, std::vector<int32_t> outs) {
  amk_instruction_t inst{};
  inst.op = op;
  inst.n_inputs = static_cast<int32_t>(ins.size());
  inst.n_outputs = static_cast<int32_t>(outs.size());
  for (size_t i = 0; i < ins.size(); ++i) inst.inputs[i] = ins[i];
  for (size_t i = 0; i < outs.size(); ++i) inst.outputs[i] = outs[i];
  return inst;
}

// ---- comparisons ----------------------------------------------------------------------------------

/// Compare got[i] with want[i]: |got - want| <= tol[i]. Reports up to 10 mismatches (op, index,
/// expected, got, tolerance) and returns how many there were.
inline size_t count_mismatches(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                               const std::vector<double>& tol) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same_special = (std::isnan(got[i]) && std::isnan(want[i])) || (std::isinf(want[i]) && got[i] == want[i]);
    if (same_special || std::fabs(got[i] - want[i]) <= tol[i]) continue;
    if (++bad <= 10)
      UNSCOPED_INFO(what << "[" << i << "]: expected " << want[i] << ", got " << got[i] << " (tol " << tol[i] << ")");
  }
  return bad;
}

/// Tolerance of an output element of `dtype` whose exact value is `want` and whose fp32
/// computation works at magnitude `mag` (the sum of |terms|; |want| for elementwise ops):
/// F32 rel 1e-5 of mag; BF16 / F16 one ulp of want plus the fp32 slack.
inline double tolerance(int32_t dtype, double want, double mag) {
  const double f32 = 1e-5 * std::fmax(mag, std::fabs(want)) + 1e-30;
  if (dtype == AMK_DTYPE_BF16) return bf16_ulp(want) + f32;
  if (dtype == AMK_DTYPE_F16) return f16_ulp(want) + f32;
  return f32;
}

/// Check every element of buffer `out` against `want` (magnitudes `mag`, or |want| when empty).
inline void check_output(const RefProgram& p, int32_t out, int32_t dtype, const std::vector<double>& want,
                         const std::vector<double>& mag = {}, const std::string& what = "y") {
  const auto got = p.values(out);
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) tol[i] = tolerance(dtype, want[i], mag.empty() ? std::fabs(want[i]) : mag[i]);
  CHECK(count_mismatches(what, got, want, tol) == 0);
  CHECK(p.guards_intact());
}

}  // namespace amk::test
