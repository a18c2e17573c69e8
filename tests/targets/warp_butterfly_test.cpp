// tests/targets/warp_butterfly_test.cpp: the xor-butterfly schedule that gpu::warp_sum and
// gpu::warp_max run (targets/warp_butterfly.h, the same function, not a copy), emulated on the host
// over a whole warp held as an array: the exchange permutes lanes exactly like a shuffle-xor.
// Proves, for 32-lane (CUDA) and 64-lane (AMD CDNA) warps, that every lane ends up with every
// lane's contribution exactly once, and that a schedule sized for 32 lanes leaves a 64-lane
// wavefront split in two halves (why device code must use kWarpSize, never a literal 32).
// Does not prove what the hardware shuffle does (__shfl_xor on a real wavefront): nothing AMD can
// run here; that needs the [gpu] tests on an AMD GPU.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <type_traits>

#include "targets/warp_butterfly.h"

namespace {

/// One lane's knowledge: how many times each source lane's value has been folded into it.
template <int N>
using Counts = std::array<int, N>;
/// A whole warp of N lanes, as the emulation sees it.
template <int N>
using Warp = std::array<Counts<N>, N>;

/// Lane l receives lane (l ^ m)'s value, as __shfl_xor(v, m) does on every lane at once.
template <int N>
struct XorExchange {
  Warp<N> operator()(const Warp<N>& v, int m) const {
    Warp<N> out{};
    for (int l = 0; l < N; ++l) out[static_cast<size_t>(l)] = v[static_cast<size_t>(l ^ m)];
    return out;
  }
};

/// Per lane, elementwise sum of the two count vectors (the emulated `+` of warp_sum).
template <int N>
struct AddCounts {
  Warp<N> operator()(const Warp<N>& a, const Warp<N>& b) const {
    Warp<N> out{};
    for (size_t l = 0; l < N; ++l)
      for (size_t s = 0; s < N; ++s) out[l][s] = a[l][s] + b[l][s];
    return out;
  }
};

/// Lane l starts knowing only itself.
template <int N>
Warp<N> identity_warp() {
  Warp<N> w{};
  for (size_t l = 0; l < N; ++l) w[l][l] = 1;
  return w;
}

/// Number of (lane, source) pairs whose count is not exactly 1 after a W-wide butterfly on N lanes.
template <int W, int N>
int bad_pairs() {
  const Warp<N> done = amk::gpu::warp_butterfly<W>(identity_warp<N>(), XorExchange<N>{}, AddCounts<N>{});
  int bad = 0;
  for (size_t l = 0; l < N; ++l)
    for (size_t s = 0; s < N; ++s) bad += done[l][s] != 1 ? 1 : 0;
  return bad;
}

/// Float version of a warp: what warp_sum / warp_max see, one value per lane.
template <int N>
using Values = std::array<float, N>;

}  // namespace

TEST_CASE("warp butterfly: every lane gets every lane exactly once, 32 and 64 lanes", "[targets]") {
  CHECK(bad_pairs<32, 32>() == 0);
  CHECK(bad_pairs<64, 64>() == 0);
}

TEST_CASE("warp butterfly: a 32-lane schedule on a 64-lane wavefront misses half the lanes", "[targets]") {
  // Each lane only ever meets the 32 lanes of its own half: 64 * 32 (lane, source) pairs are 0.
  CHECK(bad_pairs<32, 64>() == 64 * 32);
}

TEST_CASE("warp butterfly: sums and maxima agree with a plain loop for 32 and 64 lanes", "[targets]") {
  auto check = [](auto lanes) {
    constexpr int N = decltype(lanes)::value;
    Values<N> v{};
    float sum = 0.0f, max = -1.0f;
    for (int l = 0; l < N; ++l) {
      v[static_cast<size_t>(l)] = static_cast<float>((l * 37) % 101);  // small integers: exact in fp32
      sum += v[static_cast<size_t>(l)];
      max = v[static_cast<size_t>(l)] > max ? v[static_cast<size_t>(l)] : max;
    }
    auto exchange = [](const Values<N>& x, int m) {
      Values<N> out{};
      for (int l = 0; l < N; ++l) out[static_cast<size_t>(l)] = x[static_cast<size_t>(l ^ m)];
      return out;
    };
    const Values<N> s = amk::gpu::warp_butterfly<N>(v, exchange, [](const Values<N>& a, const Values<N>& b) {
      Values<N> out{};
      for (size_t l = 0; l < N; ++l) out[l] = a[l] + b[l];
      return out;
    });
    const Values<N> m = amk::gpu::warp_butterfly<N>(v, exchange, [](const Values<N>& a, const Values<N>& b) {
      Values<N> out{};
      for (size_t l = 0; l < N; ++l) out[l] = a[l] > b[l] ? a[l] : b[l];
      return out;
    });
    for (size_t l = 0; l < N; ++l) {
      INFO("width " << N << " lane " << l);
      CHECK(s[l] == sum);
      CHECK(m[l] == max);
    }
  };
  check(std::integral_constant<int, 32>{});
  check(std::integral_constant<int, 64>{});
}

TEST_CASE("warp butterfly: only power-of-two widths are accepted", "[targets]") {
  STATIC_REQUIRE(amk::gpu::warp_width_ok(32));
  STATIC_REQUIRE(amk::gpu::warp_width_ok(64));
  STATIC_REQUIRE_FALSE(amk::gpu::warp_width_ok(48));
  STATIC_REQUIRE_FALSE(amk::gpu::warp_width_ok(0));
}
