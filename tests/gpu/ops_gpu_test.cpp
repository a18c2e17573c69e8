// tests/gpu/ops_gpu_test.cpp: the row-wise and elementwise opcodes on the GPU against the CPU
// reference (instructions::cpu_execute) on random data: norms, softmax, argmax (ties, NaN, only -inf / NaN),
// embed, rope / kv_append with STEP_POS, the elementwise ops, dequant, copy, allreduce, nop.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>

#include "gpu_harness.h"
#include "instructions/common/dtype.h"

using namespace amk;
using ir::BufferKind;
using ir::DType;
using ir::Opcode;

namespace {

void check_ok(const Status& st) {
  INFO(st.message());
  CHECK(st.is_ok());
}

/// A ROPE task x -> y at params.pos `pos` (+ the step's position: STEP_POS), on worker `sm`.
void add_rope(gputest::ProgramBuilder& b, int x, int inv_freq, int y, int64_t hd, int64_t pos, int sm) {
  ir::Task& r = b.task(Opcode::Rope, {x, inv_freq}, {y}, sm, "rope");
  r.params.set("head_dim", hd);
  r.params.set("theta", 10000.0);
  r.params.set("pos", pos);
  r.params.set("flags", ir::kFlagStepPos);
}

/// A FUSED ROPE_APPEND task x -> cache row (pos + the step's position), on worker `sm`.
void add_rope_append(gputest::ProgramBuilder& b, int x, int inv_freq, int cache, int64_t hd, int64_t pos, int sm) {
  ir::Task& ra = b.task(Opcode::Fused, {x, inv_freq, cache}, {cache}, sm, "rope_append");
  ra.params.set("recipe", std::string("ROPE_APPEND"));
  ra.params.set("head_dim", hd);
  ra.params.set("pos", pos);
  ra.params.set("flags", ir::kFlagStepPos | (int64_t{5} << ir::kFlagRecipeShift));
}

/// compare_with_cpu options at step position 29 whose fill writes the standard inv_freq table
/// (theta 10000) into buffer `invf` and hands every other buffer to `other`.
gputest::CompareOptions rope_options(int invf, int64_t hd, std::function<void(int, void*, size_t)> other) {
  gputest::CompareOptions o;
  o.pos = 29;
  o.fill = [invf, hd, other](int buf, void* dst, size_t bytes) {
    if (buf != invf) return other(buf, dst, bytes);
    for (int64_t i = 0; i < hd / 2; ++i)
      static_cast<float*>(dst)[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(hd));
  };
  return o;
}

}  // namespace

TEST_CASE("gpu RMSNORM and LAYERNORM match the CPU reference", "[gpu][op:rms_norm][op:layer_norm]") {
  gputest::require_gpu();
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    for (int64_t H : {int64_t{333}, int64_t{4096}}) {
      for (int op = 0; op < 3; ++op) {
        INFO("dtype " << ir::dtype_name(dt) << " hidden " << H << " variant " << op);
        gputest::ProgramBuilder b;
        const int x = b.buffer("x", BufferKind::IoInput, dt, {3, H});
        const int w = b.buffer("w", BufferKind::Weight, dt, {H});
        const int bias = b.buffer("b", BufferKind::IoInput, dt, {H});
        const int y = b.buffer("y", BufferKind::IoOutput, dt, {3, H});
        std::vector<int> in = {x, w};
        if (op == 2) in.push_back(bias);
        ir::Task& t = b.task(op == 0 ? Opcode::RmsNorm : Opcode::LayerNorm, in, {y}, 0, "norm");
        t.params.set("eps", 1e-5);
        t.params.set("hidden", H);
        check_ok(gputest::compare_with_cpu(b.p));
      }
    }
  }
}

TEST_CASE("gpu elementwise ops match the CPU reference", "[gpu][op:add][op:mul][op:silu_mul][op:gelu][op:allreduce_shard]") {
  gputest::require_gpu();
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    INFO("dtype " << ir::dtype_name(dt));
    gputest::ProgramBuilder b;
    const int64_t n = 5001;
    const int a = b.buffer("a", BufferKind::IoInput, dt, {n});
    const int c = b.buffer("b", BufferKind::IoInput, dt, {n});
    const int d = b.buffer("c", BufferKind::IoInput, DType::F32, {n});
    const int y_add = b.buffer("y_add", BufferKind::IoOutput, dt, {n});
    const int y_mul = b.buffer("y_mul", BufferKind::IoOutput, DType::F32, {n});
    const int y_scale = b.buffer("y_scale", BufferKind::IoOutput, dt, {n});
    const int y_silu = b.buffer("y_silu", BufferKind::IoOutput, dt, {n});
    const int y_gelu = b.buffer("y_gelu", BufferKind::IoOutput, DType::F32, {n});
    const int y_sum = b.buffer("y_sum", BufferKind::IoOutput, dt, {n});
    b.task(Opcode::Add, {a, c}, {y_add}, 0, "add");
    b.task(Opcode::Mul, {a, c}, {y_mul}, 1, "mul");
    b.task(Opcode::Mul, {a}, {y_scale}, 2, "scale").params.set("scale", 0.37);
    b.task(Opcode::SiluMul, {a, c}, {y_silu}, 0, "silu_mul");
    b.task(Opcode::Gelu, {a}, {y_gelu}, 1, "gelu");
    b.task(Opcode::AllreduceShard, {a, c, d}, {y_sum}, 2, "allreduce");
    check_ok(gputest::compare_with_cpu(b.p));
  }
}

TEST_CASE("gpu SOFTMAX and SAMPLE_ARGMAX match the CPU reference", "[gpu][op:softmax][op:sample_argmax]") {
  gputest::require_gpu();
  for (DType dt : {DType::F32, DType::BF16}) {
    gputest::ProgramBuilder b;
    const int x = b.buffer("x", BufferKind::IoInput, dt, {3, 1000});
    const int y = b.buffer("y", BufferKind::IoOutput, dt, {3, 1000});
    // 32003 logits: the 8-wide loads cover 32000, the last 3 take the scalar tail.
    const int logits = b.buffer("logits", BufferKind::IoInput, dt, {32003});
    const int tok = b.buffer("tok", BufferKind::IoOutput, DType::I32, {1});
    b.task(Opcode::Softmax, {x}, {y}, 0, "softmax");
    b.task(Opcode::SampleArgmax, {logits}, {tok}, 1, "argmax");
    // Variants 4 and 5: nothing above -inf (the F32 scan takes only larger values and rescans):
    // NaN and -inf only (the lowest -inf wins, index 1), and all NaN (token 0).
    for (int variant = 0; variant < 6; ++variant) {
      INFO("dtype " << ir::dtype_name(dt) << " variant " << variant);
      gputest::CompareOptions o;
      o.seed = 7 + variant;
      o.fill = [&, variant](int buf, void* dst, size_t bytes) {
        const bool f32 = dt == DType::F32;
        const size_t n = bytes / (f32 ? 4 : 2);
        for (size_t i = 0; i < n; ++i) {
          float v = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(variant)) * 4.0f;
          if (buf == x && i >= 2000) v = -INFINITY;                    // row 2 fully masked
          if (buf == logits && variant == 1 && (i == 17 || i == 31000 || i == 32002)) v = 9.0f;  // tie: lowest wins
          if (buf == logits && variant == 3 && i == 32001) v = 9.5f;  // the maximum in the tail
          if (buf == logits && variant == 2 && i % 3 == 0) v = NAN;    // NaN never wins
          if (buf == logits && variant == 2 && i == 5) v = NAN;
          if (buf == logits && variant == 4) v = i % 3 == 0 ? NAN : -INFINITY;
          if (buf == logits && variant == 5) v = NAN;
          if (f32) static_cast<float*>(dst)[i] = v;
          else static_cast<uint16_t*>(dst)[i] = instructions::f32_to_bf16(v);
        }
      };
      check_ok(gputest::compare_with_cpu(b.p, o));
    }
  }
}

TEST_CASE("gpu SAMPLE_ARGMAX tiles and their combine match the CPU reference and the whole scan",
          "[gpu][op:sample_argmax]") {
  gputest::require_gpu();
  // 32003 logits in tiles of 6401 (the last 6): every tile but the first starts unaligned for the
  // float4 scan, and ties and NaN cross tile boundaries. The candidates are an output too, so each
  // tile's index is compared; the whole scan runs beside them (the CPU tests check that the
  // reference's combine equals its whole scan).
  const int64_t n = 32003, tile = 6401, tiles = (n + tile - 1) / tile;
  for (DType dt : {DType::F32, DType::BF16}) {
    gputest::ProgramBuilder b;
    const int logits = b.buffer("logits", BufferKind::IoInput, dt, {n});
    const int cand = b.buffer("cand", BufferKind::IoOutput, DType::I32, {tiles});
    const int tok = b.buffer("tok", BufferKind::IoOutput, DType::I32, {1});
    const int whole = b.buffer("whole", BufferKind::IoOutput, DType::I32, {1});
    std::vector<std::pair<int, int>> after_tiles;
    for (int64_t t = 0; t < tiles; ++t) {
      ir::Task& task = b.task(Opcode::SampleArgmax, {logits}, {cand}, static_cast<int>(t % 3), "tile");
      task.params.set("n_off", t * tile);
      task.params.set("N_tile", std::min(tile, n - t * tile));
      task.params.set("m_off", t);
      after_tiles.push_back({static_cast<int>(t), 1});
    }
    b.task(Opcode::SampleArgmax, {logits, cand}, {tok}, 1, "combine", after_tiles);
    b.task(Opcode::SampleArgmax, {logits}, {whole}, 2, "whole");
    for (int variant = 0; variant < 4; ++variant) {
      INFO("dtype " << ir::dtype_name(dt) << " variant " << variant);
      gputest::CompareOptions o;
      o.seed = 17 + variant;
      o.fill = [&, variant](int buf, void* dst, size_t bytes) {
        const bool f32 = dt == DType::F32;
        const size_t count = bytes / (f32 ? 4 : 2);
        for (size_t i = 0; i < count; ++i) {
          float v = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(variant)) * 4.0f;
          if (buf == logits && variant == 1 && (i == 6400 || i == 6401 || i == 32002)) v = 9.0f;  // tie across tiles
          if (buf == logits && variant == 2 && (i < 6401 || i % 3 == 0)) v = NAN;  // an all-NaN tile
          if (buf == logits && variant == 3) v = NAN;                              // all NaN: token 0
          if (f32) static_cast<float*>(dst)[i] = v;
          else static_cast<uint16_t*>(dst)[i] = instructions::f32_to_bf16(v);
        }
      };
      check_ok(gputest::compare_with_cpu(b.p, o));
    }
  }
}

TEST_CASE("gpu EMBED, ROPE, KV_APPEND and FUSED ROPE_APPEND (STEP_POS) match the CPU reference",
          "[gpu][op:embed][op:rope][op:kv_append][op:fused]") {
  gputest::require_gpu();
  for (int64_t hd : {int64_t{64}, int64_t{128}}) {
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      INFO("head_dim " << hd << " dtype " << ir::dtype_name(dt));
      gputest::ProgramBuilder b;
      const int ids = b.buffer("ids", BufferKind::IoInput, DType::I32, {3});
      const int table = b.buffer("table", BufferKind::Weight, dt, {7, 96});
      const int e = b.buffer("e", BufferKind::IoOutput, dt, {3, 96});
      const int q = b.buffer("q", BufferKind::IoInput, dt, {4 * hd});
      const int invf = b.buffer("inv_freq", BufferKind::IoInput, DType::F32, {hd / 2});
      const int qr = b.buffer("q_rot", BufferKind::IoOutput, dt, {4 * hd});
      const int kv = b.buffer("k_new", BufferKind::IoInput, dt, {2 * hd});
      const int cache = b.buffer("k_cache", BufferKind::KvCache, dt, {40, 2 * hd});
      b.task(Opcode::Embed, {ids, table}, {e}, 0, "embed").params.set("hidden", int64_t{96});
      add_rope(b, q, invf, qr, hd, 2, 1);
      ir::Task& k = b.task(Opcode::KvAppend, {kv, cache}, {cache}, 2, "kv_append");
      k.params.set("pos", int64_t{1});
      k.params.set("flags", ir::kFlagStepPos);
      const int k2 = b.buffer("k_new2", BufferKind::IoInput, dt, {2 * hd});
      const int cache2 = b.buffer("k_cache2", BufferKind::KvCache, dt, {40, 2 * hd});
      add_rope_append(b, k2, invf, cache2, hd, 3, 0);  // row 32 at o.pos 29
      const gputest::CompareOptions o = rope_options(invf, hd, [&](int buf, void* dst, size_t bytes) {
        if (buf == ids) {
          const int32_t v[3] = {6, 0, 3};
          std::memcpy(dst, v, sizeof v);
          return;
        }
        for (size_t i = 0; i < bytes; ++i) static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>((i * 37 + 11) & 0x3f);
      });
      check_ok(gputest::compare_with_cpu(b.p, o));
    }
  }
}

// The bf16 fast path (instructions/rope_bf16.cuh) takes kRopePairs pairs per thread per round: 48
// heads of 64 are 1536 pairs, more than one round of the block's compute threads (352 x 3), so the
// second round and its partial tail run too. Positions differ per task (pos 7 + step 29).
TEST_CASE("gpu ROPE and FUSED ROPE_APPEND over more pairs than one round (bf16 fast path)",
          "[gpu][op:rope][op:fused]") {
  gputest::require_gpu();
  constexpr int64_t hd = 64, heads = 48;
  gputest::ProgramBuilder b;
  const int q = b.buffer("q", BufferKind::IoInput, DType::BF16, {heads * hd});
  const int invf = b.buffer("inv_freq", BufferKind::IoInput, DType::F32, {hd / 2});
  const int qr = b.buffer("q_rot", BufferKind::IoOutput, DType::BF16, {heads * hd});
  const int k = b.buffer("k_new", BufferKind::IoInput, DType::BF16, {heads * hd});
  const int cache = b.buffer("k_cache", BufferKind::KvCache, DType::BF16, {40, heads * hd});
  add_rope(b, q, invf, qr, hd, 7, 0);
  add_rope_append(b, k, invf, cache, hd, 3, 1);  // row 32 at o.pos 29
  const gputest::CompareOptions o = rope_options(invf, hd, [](int, void* dst, size_t bytes) {
    for (size_t i = 0; i < bytes / 2; ++i)  // every other buffer is bf16
      static_cast<uint16_t*>(dst)[i] = instructions::f32_to_bf16(std::sin(0.11f * static_cast<float>(i)) * 3.0f);
  });
  check_ok(gputest::compare_with_cpu(b.p, o));
}

TEST_CASE("gpu DEQUANT, COPY and NOP match the CPU reference", "[gpu][op:dequant][op:copy][op:nop]") {
  gputest::require_gpu();
  gputest::ProgramBuilder b;
  const int q8 = b.buffer("q8", BufferKind::IoInput, DType::I8, {6, 100});
  const int s8 = b.buffer("s8", BufferKind::IoInput, DType::F32, {6, 4});
  const int z8 = b.buffer("z8", BufferKind::IoInput, DType::F32, {6, 4});
  const int y8 = b.buffer("y8", BufferKind::IoOutput, DType::BF16, {6, 100});
  const int q4 = b.buffer("q4", BufferKind::IoInput, DType::I4, {5, 64});
  const int s4 = b.buffer("s4", BufferKind::IoInput, DType::F16, {5, 2});
  const int y4 = b.buffer("y4", BufferKind::IoOutput, DType::F32, {5, 64});
  const int cx = b.buffer("cx", BufferKind::IoInput, DType::F32, {1001});
  const int cy = b.buffer("cy", BufferKind::IoOutput, DType::BF16, {1001});
  const int rx = b.buffer("rx", BufferKind::IoInput, DType::BF16, {1001});
  const int ry = b.buffer("ry", BufferKind::IoOutput, DType::BF16, {1001});
  const int ix = b.buffer("ix", BufferKind::IoInput, DType::I4, {33});
  const int iy = b.buffer("iy", BufferKind::IoOutput, DType::I4, {33});
  ir::Task& d8 = b.task(Opcode::Dequant, {q8, s8, z8}, {y8}, 0, "dequant8");
  d8.params.set("qdtype", int64_t{6});
  d8.params.set("group", int64_t{32});
  ir::Task& d4 = b.task(Opcode::Dequant, {q4, s4}, {y4}, 1, "dequant4");
  d4.params.set("qdtype", int64_t{7});
  d4.params.set("group", int64_t{32});
  b.task(Opcode::Copy, {cx}, {cy}, 2, "copy_cast");
  b.task(Opcode::Copy, {rx}, {ry}, 0, "copy_raw");
  b.task(Opcode::Copy, {ix}, {iy}, 1, "copy_i4");
  b.task(Opcode::Nop, {}, {}, 2, "nop");
  check_ok(gputest::compare_with_cpu(b.p));
}
#endif  // AMK_GPU_TESTS
