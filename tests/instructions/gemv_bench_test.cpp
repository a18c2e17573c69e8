// tests/instructions/gemv_bench_test.cpp: single-thread GEMV_TILE weight throughput of the CPU
// reference (hidden: run with `amk_tests "[.bench]"`), next to a plain streaming read of the same
// machine, so the ratio says how close the reference gets to memory bandwidth.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "instructions/cpu_dispatch.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best-of-n GB/s of one GEMV_TILE over an [N, K] weight of `dtype` (`esize` bytes per element).
double gemv_gbps(int32_t dtype, int64_t esize, int64_t N, int64_t K) {
  std::vector<uint8_t> w(static_cast<size_t>(N * K * esize));
  std::mt19937 rng(1);
  for (size_t i = 0; i < w.size(); i += 2) {  // small finite values in any of the three dtypes
    const uint16_t h = static_cast<uint16_t>(0x3c00 | (rng() & 0x03ff));
    std::memcpy(&w[i], &h, 2);
  }
  std::vector<float> x(static_cast<size_t>(K), 0.5f), y(static_cast<size_t>(N));
  amk_buffer_t bufs[3] = {};
  bufs[0] = {x.data(), K, 1, AMK_DTYPE_F32, 0, 0, {K}, {1}};
  bufs[1] = {w.data(), N * K, 2, dtype, 0, 0, {N, K}, {K, 1}};
  bufs[2] = {y.data(), N, 1, AMK_DTYPE_F32, 0, 0, {N}, {1}};
  amk_program_t prog{};
  prog.buffers = bufs;
  prog.n_buffers = 3;
  amk_instruction_t inst{};
  inst.op = AMK_OP_GEMV_TILE;
  inst.n_inputs = 2;
  inst.n_outputs = 1;
  inst.inputs[0] = 0;
  inst.inputs[1] = 1;
  inst.outputs[0] = 2;
  inst.params.K = static_cast<int32_t>(K);
  inst.params.N_tile = static_cast<int32_t>(N);
  double best = 1e30;
  for (int it = 0; it < 6; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(amk::instructions::cpu_execute(prog, inst) == AMK_DEVERR_NONE);
    if (it > 0) best = std::min(best, seconds_since(t0));
  }
  return static_cast<double>(w.size()) / best / 1e9;
}

// Best-of-n GB/s of summing a buffer much larger than the caches (the machine's read stream).
// The lane loop is unrolled for the same reason as in matmul_ref.cpp: accumulators in registers.
double read_gbps(size_t bytes) {
  std::vector<uint64_t> buf(bytes / 8, 1);
  double best = 1e30;
  volatile uint64_t sink = 0;
  for (int it = 0; it < 4; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t acc[8] = {};
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
      for (int j = 0; j < 8; ++j) acc[j] += buf[i + j];
    }
    sink = sink + acc[0] + acc[7];
    if (it > 0) best = std::min(best, seconds_since(t0));
  }
  return static_cast<double>(bytes) / best / 1e9;
}

}  // namespace

TEST_CASE("GEMV_TILE 4096x4096 weight throughput, one thread", "[.bench]") {
  const double stream = read_gbps(size_t{512} << 20);
  const double bf16 = gemv_gbps(AMK_DTYPE_BF16, 2, 4096, 4096);  // 32 MiB: about the size of an L3
  const double f16 = gemv_gbps(AMK_DTYPE_F16, 2, 4096, 4096);
  const double f32 = gemv_gbps(AMK_DTYPE_F32, 4, 4096, 4096);
  const double big = gemv_gbps(AMK_DTYPE_BF16, 2, 32768, 4096);  // 256 MiB: DRAM-bound
  WARN("read stream (512 MiB) " << stream << " GB/s; GEMV weight GB/s: bf16 4096x4096 " << bf16 << ", f16 "
                                << f16 << ", f32 " << f32 << "; bf16 32768x4096 " << big << " ("
                                << 100 * big / stream << "% of the stream)");
  CHECK(bf16 > 0);
}
