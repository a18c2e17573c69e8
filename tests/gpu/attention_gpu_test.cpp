// tests/gpu/attention_gpu_test.cpp: ATTENTION_TILE (GQA 1/4/8, head_dim 64/128, bias, STEP_KV
// windows) and split-KV PARTIAL_WRITE partitions merged by ATTENTION_COMBINE on another worker,
// including an empty partition, against the CPU reference.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include "gpu_harness.h"

using namespace amk;
using ir::BufferKind;
using ir::DType;
using ir::Opcode;

TEST_CASE("gpu ATTENTION_TILE matches the CPU reference (GQA, head_dim, dtypes)", "[gpu][op:attention_tile]") {
  gputest::require_gpu();
  // head_dim 64 / 128 take the 16-byte path for every dtype; 80 (10 or 20 lanes per row) and f32
  // at 256 (64 lanes) the scalar one; bf16 / f16 at 256 the 16-byte path with a row per warp.
  for (int64_t hd : {int64_t{64}, int64_t{80}, int64_t{128}, int64_t{256}}) {
    for (int64_t group : {int64_t{1}, int64_t{4}, int64_t{8}}) {
      for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        const int64_t n_kv = 2, n_heads = n_kv * group, S = 300;
        const bool bias = group == 4;
        INFO("head_dim " << hd << " group " << group << " dtype " << ir::dtype_name(dt) << " bias " << bias);
        gputest::ProgramBuilder b;
        const int q = b.buffer("q", BufferKind::IoInput, dt, {n_heads * hd});
        const int k = b.buffer("k_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
        const int v = b.buffer("v_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
        const int bs = b.buffer("bias", BufferKind::IoInput, DType::F32, {S});
        const int out = b.buffer("out", BufferKind::IoOutput, dt, {n_heads * hd});
        // Two tasks split the q heads; the window follows the step (STEP_KV).
        for (int t = 0; t < 2; ++t) {
          std::vector<int> in = {q, k, v};
          if (bias) in.push_back(bs);
          ir::Task& a = b.task(Opcode::AttentionTile, in, {out}, t, "attn.h" + std::to_string(t));
          a.params.set("head_dim", hd);
          a.params.set("n_heads", n_heads);
          a.params.set("n_kv_heads", n_kv);
          a.params.set("kv_start", int64_t{0});
          a.params.set("kv_len", S);
          a.params.set("scale", 1.0 / std::sqrt(static_cast<double>(hd)));
          a.params.set("n_off", t * n_heads / 2);
          a.params.set("N_tile", n_heads / 2);
          a.params.set("flags", ir::kFlagStepKv);
        }
        gputest::CompareOptions o;
        o.pos = 257;
        Status st = gputest::compare_with_cpu(b.p, o);
        INFO(st.message());
        CHECK(st.is_ok());
      }
    }
  }
}

TEST_CASE("gpu split-KV ATTENTION_TILE partials + ATTENTION_COMBINE match the CPU reference",
          "[gpu][op:attention_tile][op:attention_combine]") {
  gputest::require_gpu();
  for (int64_t hd : {int64_t{64}, int64_t{128}}) {
    for (int32_t pos : {5, 190}) {  // pos 5: partitions 1 and 2 are empty
      const int64_t n_kv = 2, n_heads = 8, S = 192, chunk = 64;
      INFO("head_dim " << hd << " pos " << pos);
      gputest::ProgramBuilder b;
      const int q = b.buffer("q", BufferKind::IoInput, DType::BF16, {n_heads * hd});
      const int k = b.buffer("k_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
      const int v = b.buffer("v_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
      std::vector<int> parts;
      for (int p = 0; p < 3; ++p)
        parts.push_back(b.buffer("part" + std::to_string(p), BufferKind::Activation, DType::F32, {n_heads * (hd + 2)}));
      const int out = b.buffer("out", BufferKind::IoOutput, DType::BF16, {n_heads * hd});
      for (int p = 0; p < 3; ++p) {
        ir::Task& a = b.task(Opcode::AttentionTile, {q, k, v}, {parts[p]}, p, "attn.p" + std::to_string(p));
        a.params.set("head_dim", hd);
        a.params.set("n_heads", n_heads);
        a.params.set("n_kv_heads", n_kv);
        a.params.set("kv_start", chunk * p);
        a.params.set("kv_len", chunk);
        a.params.set("scale", 0.125);
        a.params.set("flags", ir::kFlagStepKv | ir::kFlagPartialWrite);
      }
      ir::Task& c = b.task(Opcode::AttentionCombine, parts, {out}, 3, "combine", {{0, 1}, {1, 1}, {2, 1}});
      c.params.set("head_dim", hd);
      c.params.set("n_heads", n_heads);
      gputest::CompareOptions o;
      o.pos = pos;
      o.outputs = {out, parts[0]};
      Status st = gputest::compare_with_cpu(b.p, o);
      INFO(st.message());
      CHECK(st.is_ok());
    }
  }
}
#endif  // AMK_GPU_TESTS
