// tests/gpu/attention_gpu_test.cpp: ATTENTION_TILE (GQA 1/4/8/12, head_dim 64/128, bias, STEP_KV
// windows short and long, task head ranges across KV heads) and split-KV PARTIAL_WRITE partitions merged by ATTENTION_COMBINE
// (whole, and in head tiles on other workers), including an empty partition, against the CPU
// reference; FUSED ROPE_ATTENTION likewise, with the cache row it must not read poisoned.
#ifdef AMK_GPU_TESTS
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "instructions/common/dtype.h"
#include "ir/opspec.h"

#include "gpu_harness.h"

using namespace amk;
using ir::BufferKind;
using ir::DType;
using ir::Opcode;

namespace {

/// n_kv KV heads of `group` q heads each over a cache of S rows (and an F32 bias over it when
/// `bias`), one task per head range in `bounds` ([bounds[i], bounds[i + 1]) on worker i); the
/// window follows the step (STEP_KV).
ir::Program ranged_attention(int64_t hd, int64_t n_kv, int64_t group, DType dt, int64_t S,
                             const std::vector<int64_t>& bounds, bool bias = false) {
  const int64_t n_heads = n_kv * group;
  gputest::ProgramBuilder b;
  const int q = b.buffer("q", BufferKind::IoInput, dt, {n_heads * hd});
  const int k = b.buffer("k_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
  const int v = b.buffer("v_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
  const int out = b.buffer("out", BufferKind::IoOutput, dt, {n_heads * hd});
  std::vector<int> in = {q, k, v};
  if (bias) in.push_back(b.buffer("bias", BufferKind::IoInput, DType::F32, {S}));
  for (size_t t = 0; t + 1 < bounds.size(); ++t) {
    ir::Task& a = b.task(Opcode::AttentionTile, in, {out}, static_cast<int>(t), "attn.t" + std::to_string(t));
    a.params.set("head_dim", hd);
    a.params.set("n_heads", n_heads);
    a.params.set("n_kv_heads", n_kv);
    a.params.set("kv_start", int64_t{0});
    a.params.set("kv_len", S);
    a.params.set("scale", 1.0 / std::sqrt(static_cast<double>(hd)));
    a.params.set("n_off", bounds[t]);
    a.params.set("N_tile", bounds[t + 1] - bounds[t]);
    a.params.set("flags", ir::kFlagStepKv);
  }
  return b.p;
}

/// q heads of `group` per KV head over 2 KV heads, the heads split over two tasks.
ir::Program two_task_attention(int64_t hd, int64_t group, DType dt, int64_t S, bool bias) {
  return ranged_attention(hd, 2, group, dt, S, {0, group, 2 * group}, bias);
}

}  // namespace

TEST_CASE("gpu ATTENTION_TILE matches the CPU reference (GQA, head_dim, dtypes)", "[gpu][op:attention_tile]") {
  gputest::require_gpu();
  // head_dim 64 / 128 take the 16-byte path for every dtype; 80 (10 or 20 lanes per row) and f32
  // at 256 (64 lanes) the scalar one; bf16 / f16 at 256 the 16-byte path with a row per warp.
  for (int64_t hd : {int64_t{64}, int64_t{80}, int64_t{128}, int64_t{256}}) {
    for (int64_t group : {int64_t{1}, int64_t{4}, int64_t{8}}) {
      for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        const bool bias = group == 4;
        INFO("head_dim " << hd << " group " << group << " dtype " << ir::dtype_name(dt) << " bias " << bias);
        gputest::CompareOptions o;
        o.pos = 257;
        Status st = gputest::compare_with_cpu(two_task_attention(hd, group, dt, 300, bias), o);
        INFO(st.message());
        CHECK(st.is_ok());
      }
    }
  }
}

namespace {

/// Random in [-1, 1) for every buffer, but the cache rows past `pos` (outside the STEP_KV window)
/// are NaN: a kernel that reads them, even to multiply by a zero weight, poisons its output.
std::function<void(int, void*, size_t)> poison_rows_after(const ir::Program& p, int32_t pos) {
  return [&p, pos](int buffer, void* dst, size_t bytes) {
    std::mt19937_64 rng(static_cast<uint64_t>(buffer) * 104729u + 7u);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const ir::Buffer& buf = p.buffers[static_cast<size_t>(buffer)];
    const size_t esize = buf.dtype == DType::F32 ? 4 : 2;
    const int64_t row = buf.shape.back();
    const bool cache = buf.kind == BufferKind::KvCache;
    for (size_t i = 0; i < bytes / esize; ++i) {
      const bool poisoned = cache && static_cast<int64_t>(i) / row > pos;
      const float f = poisoned ? std::numeric_limits<float>::quiet_NaN() : u(rng);
      if (buf.dtype == DType::F32) std::memcpy(static_cast<char*>(dst) + i * 4, &f, 4);
      const uint16_t h = buf.dtype == DType::BF16 ? instructions::f32_to_bf16(f) : instructions::f32_to_f16(f);
      if (buf.dtype != DType::F32) std::memcpy(static_cast<char*>(dst) + i * 2, &h, 2);
    }
  };
}

}  // namespace

TEST_CASE("gpu ATTENTION_TILE head ranges across KV heads and groups over 8 match the CPU reference",
          "[gpu][op:attention_tile]") {
  gputest::require_gpu();
  // The tensor-core path (bf16 / f16, head_dim 64; 128 under -DAMK_ATTN_MMA_HD128) runs a task's
  // heads one KV head at a time, at most 8 a pass: group 12 takes passes of 8 + 4, ranges start
  // and end mid-group (heads 5, 7 / 8, 17), and one range of 2 or 3 heads sits inside a group. Windows of
  // 1, 37 and 250 keys end inside a block of 16, with the rows after them NaN.
  for (int64_t hd : {int64_t{64}, int64_t{128}}) {
    for (DType dt : {DType::BF16, DType::F16}) {
      for (int64_t group : {int64_t{4}, int64_t{12}}) {
        for (int32_t pos : {0, 36, 249}) {
          const std::vector<int64_t> bounds = group == 4 ? std::vector<int64_t>{0, 5, 7, 12}
                                                         : std::vector<int64_t>{0, 5, 8, 17, 36};
          INFO("head_dim " << hd << " dtype " << ir::dtype_name(dt) << " group " << group << " pos " << pos);
          const ir::Program p = ranged_attention(hd, 3, group, dt, 300, bounds);
          gputest::CompareOptions o;
          o.pos = pos;
          o.fill = poison_rows_after(p, pos);
          Status st = gputest::compare_with_cpu(p, o);
          INFO(st.message());
          CHECK(st.is_ok());
        }
      }
    }
  }
}

TEST_CASE("gpu ATTENTION_TILE long windows match the CPU reference", "[gpu][op:attention_tile]") {
  gputest::require_gpu();
  // 512 and 1101 keys: many load rounds per warp (120 keys a round at head_dim 128 in bf16), the
  // last one partial, for each 16-byte dtype.
  for (int64_t hd : {int64_t{64}, int64_t{128}}) {
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      for (int32_t pos : {int32_t{511}, int32_t{1100}}) {
        INFO("head_dim " << hd << " dtype " << ir::dtype_name(dt) << " pos " << pos);
        gputest::CompareOptions o;
        o.pos = pos;
        Status st = gputest::compare_with_cpu(two_task_attention(hd, 4, dt, 1200, false), o);
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

namespace {

/// Buffer ids of a split-KV attention task: q, the caches and its partials' output.
struct AttnOperands {
  int q, k, v, out;
};
struct AttnShape {
  int64_t hd, n_heads, n_kv;
};

/// An ATTENTION_TILE of KV head g's query heads over keys [kv_start, kv_start + kv_len), writing
/// {acc, m, l} partials (STEP_KV | PARTIAL_WRITE) into `o.out`.
ir::Task& partial_attention(gputest::ProgramBuilder& b, AttnOperands o, int sm, const std::string& label, AttnShape s,
                            int64_t g, int64_t kv_start, int64_t kv_len, double scale) {
  ir::Task& a = b.task(Opcode::AttentionTile, {o.q, o.k, o.v}, {o.out}, sm, label);
  a.params.set("head_dim", s.hd);
  a.params.set("n_heads", s.n_heads);
  a.params.set("n_kv_heads", s.n_kv);
  a.params.set("kv_start", kv_start);
  a.params.set("kv_len", kv_len);
  a.params.set("scale", scale);
  a.params.set("n_off", g * s.n_heads / s.n_kv);
  a.params.set("N_tile", s.n_heads / s.n_kv);
  a.params.set("flags", ir::kFlagStepKv | ir::kFlagPartialWrite);
  return a;
}

}  // namespace

TEST_CASE("gpu ATTENTION_COMBINE head tiles on separate workers match the CPU reference",
          "[gpu][op:attention_tile][op:attention_combine]") {
  gputest::require_gpu();
  // GQA group 4 (each attention task one KV head's 4 query heads), 4 partitions, and the combine
  // cut into head tiles of 3 heads (the last one 2) on three other workers.
  const int64_t hd = 128, n_kv = 2, n_heads = 8, S = 256, chunk = 64;
  for (int32_t pos : {40, 250}) {  // pos 40: partitions 1..3 are empty
    INFO("pos " << pos);
    gputest::ProgramBuilder b;
    const int q = b.buffer("q", BufferKind::IoInput, DType::BF16, {n_heads * hd});
    const int k = b.buffer("k_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
    const int v = b.buffer("v_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
    std::vector<int> parts;
    for (int p = 0; p < 4; ++p)
      parts.push_back(b.buffer("part" + std::to_string(p), BufferKind::Activation, DType::F32, {n_heads * (hd + 2)}));
    const int out = b.buffer("out", BufferKind::IoOutput, DType::BF16, {n_heads * hd});
    int worker = 0;
    for (int p = 0; p < 4; ++p) {
      for (int64_t g = 0; g < n_kv; ++g) {
        partial_attention(b, {q, k, v, parts[p]}, worker % 4, "attn.p" + std::to_string(p) + ".g" + std::to_string(g),
                          {hd, n_heads, n_kv}, g, chunk * p, chunk, 0.088);
        ++worker;
      }
    }
    std::vector<std::pair<int, int>> all_attention;  // task i signals counter i (gputest::ProgramBuilder)
    for (int t = 0; t < worker; ++t) all_attention.push_back({t, 1});
    for (int64_t h0 = 0; h0 < n_heads; h0 += 3) {
      ir::Task& c = b.task(Opcode::AttentionCombine, parts, {out}, 1 + static_cast<int>(h0 / 3),
                           "combine.h" + std::to_string(h0), all_attention);
      c.params.set("head_dim", hd);
      c.params.set("n_heads", n_heads);
      c.params.set("n_off", h0);
      c.params.set("N_tile", std::min<int64_t>(3, n_heads - h0));
    }
    gputest::CompareOptions o;
    o.pos = pos;
    o.outputs = {out, parts[0], parts[3]};
    Status st = gputest::compare_with_cpu(b.p, o);
    INFO(st.message());
    CHECK(st.is_ok());
  }
}
TEST_CASE("gpu 16 split-KV partitions in stacked partials (m_off rows) match the CPU reference",
          "[gpu][op:attention_tile][op:attention_combine]") {
  gputest::require_gpu();
  // The preset's long-context layout: 16 partitions, 8 combine operands of 2 rows each, every
  // attention task one KV head's 4 query heads (head_dim 64: the tensor-core path; 128: scalar).
  for (int64_t hd : {int64_t{64}, int64_t{128}}) {
    for (int32_t pos : {20, 250}) {  // pos 20: partitions 2..15 are empty, so rows 1 too
      const int64_t n_kv = 2, n_heads = 8, S = 256, chunk = 16, row = n_heads * (hd + 2);
      INFO("head_dim " << hd << " pos " << pos);
      gputest::ProgramBuilder b;
      const int q = b.buffer("q", BufferKind::IoInput, DType::BF16, {n_heads * hd});
      const int k = b.buffer("k_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
      const int v = b.buffer("v_cache", BufferKind::KvCache, DType::BF16, {S, n_kv * hd});
      std::vector<int> stacks;
      for (int i = 0; i < 8; ++i)
        stacks.push_back(b.buffer("stack" + std::to_string(i), BufferKind::Activation, DType::F32, {2, row}));
      const int out = b.buffer("out", BufferKind::IoOutput, DType::BF16, {n_heads * hd});
      int worker = 0;
      for (int p = 0; p < 16; ++p) {
        for (int64_t g = 0; g < n_kv; ++g) {
          ir::Task& a = partial_attention(b, {q, k, v, stacks[static_cast<size_t>(p % 8)]}, worker % 4,
                                          "attn.p" + std::to_string(p) + ".g" + std::to_string(g), {hd, n_heads, n_kv},
                                          g, chunk * p, chunk, 0.1);
          ++worker;
          a.params.set("m_off", int64_t{p / 8});  // partition p: row p / 8 of operand p % 8
          a.out_counter = ir::CounterId(0);  // all 32 join on one counter (a task waits on 8 at most)
        }
      }
      for (int64_t h0 = 0; h0 < n_heads; h0 += 4) {
        ir::Task& c = b.task(Opcode::AttentionCombine, stacks, {out}, static_cast<int>(h0 / 4),
                             "combine.h" + std::to_string(h0), {{0, worker}});
        c.params.set("head_dim", hd);
        c.params.set("n_heads", n_heads);
        c.params.set("n_off", h0);
        c.params.set("N_tile", int64_t{4});
      }
      gputest::CompareOptions o;
      o.pos = pos;
      o.outputs = {out, stacks[0], stacks[7]};
      Status st = gputest::compare_with_cpu(b.p, o);
      INFO(st.message());
      CHECK(st.is_ok());
    }
  }
}

namespace {

/// FUSED ROPE_ATTENTION over 2 KV heads in `parts` partitions of S / parts rows (PARTIAL_WRITE
/// F32 partials when parts > 1), the q heads split over two tasks per partition. Buffer ids: 0 q,
/// 1 k_cache, 2 v_cache, 3 k_new, 4 v_new, 5 inv_freq, then the outputs.
ir::Program rope_attention(int64_t hd, int64_t group, DType dt, int64_t S, int parts, std::vector<int>* outputs) {
  const int64_t n_kv = 2, n_heads = n_kv * group, chunk = S / parts;
  gputest::ProgramBuilder b;
  const int q = b.buffer("q", BufferKind::IoInput, dt, {n_heads * hd});
  const int k = b.buffer("k_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
  const int v = b.buffer("v_cache", BufferKind::KvCache, dt, {S, n_kv * hd});
  const int k_new = b.buffer("k_new", BufferKind::IoInput, dt, {n_kv * hd});
  const int v_new = b.buffer("v_new", BufferKind::IoInput, dt, {n_kv * hd});
  const int inv_freq = b.buffer("inv_freq", BufferKind::IoInput, DType::F32, {hd / 2});
  for (int p = 0; p < parts; ++p) {
    const int out = parts > 1 ? b.buffer("part" + std::to_string(p), BufferKind::IoOutput, DType::F32, {n_heads * (hd + 2)})
                              : b.buffer("out", BufferKind::IoOutput, dt, {n_heads * hd});
    outputs->push_back(out);
    for (int t = 0; t < 2; ++t) {
      ir::Task& a = b.task(Opcode::Fused, {q, k, v, k_new, v_new, inv_freq}, {out}, 2 * p + t,
                           "rope_attn.p" + std::to_string(p) + ".h" + std::to_string(t));
      a.params.set("recipe", std::string("ROPE_ATTENTION"));
      a.params.set("head_dim", hd);
      a.params.set("n_heads", n_heads);
      a.params.set("n_kv_heads", n_kv);
      a.params.set("kv_start", chunk * p);
      a.params.set("kv_len", chunk);
      a.params.set("scale", 1.0 / std::sqrt(static_cast<double>(hd)));
      a.params.set("n_off", t * n_heads / 2);
      a.params.set("N_tile", n_heads / 2);
      a.params.set("pos", int64_t{0});
      a.params.set("flags", ir::kFlagStepPos | ir::kFlagStepKv | (parts > 1 ? ir::kFlagPartialWrite : 0) |
                                (static_cast<int64_t>(ir::FusedRecipe::RopeAttention) << ir::kFlagRecipeShift));
    }
  }
  return b.p;
}

}  // namespace

TEST_CASE("gpu FUSED ROPE_ATTENTION matches the CPU reference and never reads cache row pos",
          "[gpu][op:attention_tile][op:fused]") {
  gputest::require_gpu();
  // head_dim 64 / 128: the 16-byte path (bf16, f16, f32); 80: the scalar one. pos 0: the fresh key
  // alone; pos 100 / 299: the fresh key after cache rows, in the last partition of 1, 2 or 3.
  // Group 12 (bf16): the tensor-core path's prologue rotates 8 q heads, then 4, per task.
  for (int64_t hd : {int64_t{64}, int64_t{80}, int64_t{128}}) {
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      for (int parts : {1, 3}) {
        for (int32_t pos : {0, 100, 299}) {
          for (int64_t group : {int64_t{4}, int64_t{12}}) {
            if (group == 12 && dt != DType::BF16) continue;
            const int64_t S = 300;
            INFO("head_dim " << hd << " dtype " << ir::dtype_name(dt) << " partitions " << parts << " pos " << pos
                             << " group " << group);
            std::vector<int> outputs;
            const ir::Program p = rope_attention(hd, group, dt, S, parts, &outputs);
            // Random in [-1, 1) everywhere (inv_freq too: any table rotates), but row pos of both
            // caches is NaN: the step's row must come from k_new / v_new on both sides.
            gputest::CompareOptions o;
            o.pos = pos;
            o.outputs = outputs;
            o.fill = [&](int buffer, void* dst, size_t bytes) {
              std::mt19937_64 rng(static_cast<uint64_t>(buffer) * 7919u + 1u);
              std::uniform_real_distribution<float> u(-1.0f, 1.0f);
              const DType bdt = p.buffers[static_cast<size_t>(buffer)].dtype;
              const size_t esize = bdt == DType::F32 ? 4 : 2;
              const int64_t row = p.buffers[static_cast<size_t>(buffer)].shape.back();
              for (size_t i = 0; i < bytes / esize; ++i) {
                const bool poisoned = (buffer == 1 || buffer == 2) && static_cast<int64_t>(i) / row == pos;
                const float f = poisoned ? std::numeric_limits<float>::quiet_NaN() : u(rng);
                if (bdt == DType::F32) std::memcpy(static_cast<char*>(dst) + i * 4, &f, 4);
                const uint16_t h = bdt == DType::BF16 ? instructions::f32_to_bf16(f) : instructions::f32_to_f16(f);
                if (bdt != DType::F32) std::memcpy(static_cast<char*>(dst) + i * 2, &h, 2);
              }
            };
            Status st = gputest::compare_with_cpu(p, o);
            INFO(st.message());
            CHECK(st.is_ok());
            if (dt == DType::BF16) {  // once more through the Tensor::load prologue
              gputest::ScopedEnv generic("AMK_ROPE_PROLOGUE_GENERIC", "1");
              Status g = gputest::compare_with_cpu(p, o);
              INFO("generic prologue: " << g.message());
              CHECK(g.is_ok());
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gpu FUSED ROPE_ATTENTION at a position past its cache is a device error naming the task",
          "[gpu][op:fused]") {
  // The step-dependent bind (window, fresh row) runs in the loader warp when it stages the task
  // (TaskBlobHeader::bound; -DAMK_NO_PREBIND: in decode_once): its error must still reach the
  // launch's status with the task, and the executor must stay usable.
  gputest::require_gpu();
  std::vector<int> outputs;
  const ir::Program p = rope_attention(64, 4, DType::BF16, 300, 1, &outputs);
  auto image = gputest::load(p);
  auto ex = vm::make_cuda_executor(*image, {});
  INFO(ex.status().message());
  REQUIRE(ex.is_ok());
  vm::Executor& gpu = **ex;
  Status st = gpu.launch(300, {}, nullptr);  // the step's key would be cache row 300 of 300
  INFO(st.message());
  REQUIRE(st.code() == StatusCode::DeviceError);
  CHECK_THAT(st.message(), Catch::Contains("rope_attn.p0"));
  CHECK_THAT(st.message(), Catch::Contains("INDEX_OUT_OF_RANGE"));
  for (int32_t pos : {299, 0, 150}) CHECK(gpu.launch(pos, {}, nullptr).is_ok());
}
#endif  // AMK_GPU_TESTS
