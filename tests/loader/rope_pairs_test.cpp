// tests/loader/rope_pairs_test.cpp: WEIGHT buffers loaded with their rows in rope-pair order
// (docs/JSON.md "rope_pairs"): every row against the file, always a copy, seeded random values that
// are the permutation of the unpermuted buffer's, and errors that are those of a plain source.
// The expected order is written out here per head (b, i), not taken from rope_pairs_source_row().
#include <catch2/catch.hpp>

#include <cstring>

#include "loader/bind_weights.h"
#include "loader/image_storage.h"
#include "loader/loader.h"
#include "loader/rope_pairs.h"
#include "loader/safetensors.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

// Two heads of head_dim 8 (at 4 the permutation is its own inverse, so a loader that applied the
// inverse would pass); K differs from N so that a transposed tensor is a shape mismatch.
constexpr int64_t kHd = 8;
constexpr int64_t kN = 2 * kHd;
constexpr int64_t kK = 6;
constexpr int32_t kW = kSmallBufCount;  // the permuted buffer's id after small_program()'s buffers

ir::Buffer rope_buffer(ir::DType dtype, int32_t id = kW, int64_t hd = kHd) {
  ir::Buffer b = make_buffer(id, "wq", ir::BufferKind::Weight, dtype, {kN, kK}, "q.weight");
  b.rope_pairs = hd;
  return b;
}

/// (stored row, source row) for every row of an [n, K] buffer of head_dim hd, per head b and i.
std::vector<std::pair<int64_t, int64_t>> pair_rows(int64_t n, int64_t hd) {
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t b = 0; b < n / hd; ++b)
    for (int64_t i = 0; i < hd / 2; ++i) {
      rows.emplace_back(b * hd + 2 * i, b * hd + i);
      rows.emplace_back(b * hd + 2 * i + 1, b * hd + i + hd / 2);
    }
  return rows;
}

/// Rows of `got` ([kN, kK], `item` bytes an element) that are not the permutation of `src`.
int bad_rows(const void* got, const void* src, size_t item) {
  const size_t row = static_cast<size_t>(kK) * item;
  int bad = 0;
  for (auto [stored, from] : pair_rows(kN, kHd))
    if (std::memcmp(static_cast<const uint8_t*>(got) + static_cast<size_t>(stored) * row,
                    static_cast<const uint8_t*>(src) + static_cast<size_t>(from) * row, row) != 0 &&
        ++bad <= 10)
      FAIL_CHECK("stored row " << stored << " is not source row " << from);
  return bad;
}

std::vector<uint8_t> bytes_of(const ProgramImage& img, int32_t id) {
  const auto* p = static_cast<const uint8_t*>(img.view().buffers[id].ptr);
  return std::vector<uint8_t>(p, p + img.buffer_bytes(id));
}

/// load_program of small_program() plus `extra` with a file of small_tensors() plus `tensors`.
Result<std::unique_ptr<ProgramImage>> load_with(const std::vector<ir::Buffer>& extra,
                                                const std::vector<TensorBytes>& tensors, TempFile& w) {
  ir::Program p = small_program();
  for (const ir::Buffer& b : extra) p.buffers.push_back(b);
  std::vector<TensorBytes> all = small_tensors();
  all.insert(all.end(), tensors.begin(), tensors.end());
  REQUIRE(safetensors_write(w.path, all).is_ok());
  LoadOptions o;
  o.weights_path = w.path;
  return load_program(p, o);
}

}  // namespace

TEST_CASE("rope_pairs: the source row order per head", "[loader]") {
  for (int64_t hd : {2, 4, 64}) {
    INFO("head_dim " << hd);
    for (auto [stored, from] : pair_rows(3 * hd, hd)) CHECK(rope_pairs_source_row(stored, hd) == from);
  }
  // head_dim 4 spelled out: [0, 2, 1, 3 | 4, 6, 5, 7].
  const int64_t want[] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t r = 0; r < 8; ++r) CHECK(rope_pairs_source_row(r, 4) == want[r]);
}

TEST_CASE("rope_pairs: load_program permutes every row of the file tensor into a copy", "[loader]") {
  for (StDType dtype : {StDType::F32, StDType::BF16}) {
    const ir::DType ir_dtype = *st_dtype_to_ir(dtype);
    INFO(ir::dtype_name(ir_dtype));
    const TensorBytes q{"q.weight", dtype, {kN, kK}, encode(dtype, ramp(kN * kK, 5.0f))};
    TempFile w("rope.safetensors");
    auto img = load_with({rope_buffer(ir_dtype)}, {q}, w);
    INFO(img.status().message());
    REQUIRE(img.is_ok());
    REQUIRE((*img)->buffer_bytes(kW) == static_cast<int64_t>(q.bytes.size()));
    const void* got = (*img)->view().buffers[kW].ptr;
    CHECK(bad_rows(got, q.bytes.data(), static_cast<size_t>(st_dtype_itemsize(dtype))) == 0);
    // A copy, not the mapping: no byte of it lies in the file's tensor.
    const SafetensorsFile* file = (*img)->weights();
    const auto mapped = reinterpret_cast<uintptr_t>(file->data(*file->find("q.weight")));
    const auto at = reinterpret_cast<uintptr_t>(got);
    CHECK((at + q.bytes.size() <= mapped || at >= mapped + q.bytes.size()));
    // The permutation is not the identity (row 1 of each head is source row 4).
    CHECK(bytes_of(**img, kW) != q.bytes);
    // The same buffer without rope_pairs still binds zero-copy to the file, in the file's order.
    TempFile w2("plain.safetensors");
    ir::Buffer plain = rope_buffer(ir_dtype);
    plain.rope_pairs = 0;
    auto img2 = load_with({plain}, {q}, w2);
    REQUIRE(img2.is_ok());
    const SafetensorsFile* file2 = (*img2)->weights();
    CHECK((*img2)->view().buffers[kW].ptr == file2->data(*file2->find("q.weight")));
  }
}

TEST_CASE("rope_pairs: a leading 1 in the file's shape binds as for a plain source", "[loader]") {
  const TensorBytes q{"q.weight", StDType::F32, {1, kN, kK}, encode(StDType::F32, ramp(kN * kK, 1.0f))};
  TempFile w("rope.safetensors");
  auto img = load_with({rope_buffer(ir::DType::F32)}, {q}, w);
  INFO(img.status().message());
  REQUIRE(img.is_ok());
  CHECK(bad_rows((*img)->view().buffers[kW].ptr, q.bytes.data(), 4) == 0);
}

TEST_CASE("rope_pairs: an I4 buffer with odd rows moves elements one at a time", "[loader]") {
  // K = 3 I4 elements are 1.5 bytes a row, so rows cannot be copied whole.
  ir::Buffer b = make_buffer(0, "wq", ir::BufferKind::Weight, ir::DType::I4, {kN, 3}, "q.weight");
  b.rope_pairs = kHd;
  REQUIRE(rope_pairs_check(b).is_ok());
  std::vector<uint8_t> src(static_cast<size_t>(b.nbytes()), 0), dst(src.size(), 0);
  for (int64_t e = 0; e < kN * 3; ++e) dtype_store(ir::DType::I4, src.data(), e, static_cast<float>(e % 16 - 8));
  rope_pairs_permute(b, src.data(), dst.data());
  int bad = 0;
  for (auto [stored, from] : pair_rows(kN, kHd))
    for (int64_t c = 0; c < 3; ++c)
      if (dtype_load(ir::DType::I4, dst.data(), stored * 3 + c) != dtype_load(ir::DType::I4, src.data(), from * 3 + c))
        ++bad;
  CHECK(bad == 0);
  CHECK(dst != src);
}

TEST_CASE("rope_pairs: random weights are the permutation of the unpermuted buffer's", "[loader]") {
  for (ir::DType dtype : {ir::DType::BF16, ir::DType::F32, ir::DType::I8}) {
    INFO(ir::dtype_name(dtype));
    const size_t item = static_cast<size_t>(ir::dtype_bits(dtype) / 8);
    LoadOptions o;
    o.random_weights_seed = 29;
    // The same program with and without the permutation: the same model.
    ir::Program with = small_program();
    with.buffers.push_back(rope_buffer(dtype));
    ir::Program without = with;
    without.buffers.back().rope_pairs = 0;
    auto a = load_program(with, o);
    auto b = load_program(without, o);
    INFO(a.status().message());
    REQUIRE(a.is_ok());
    REQUIRE(b.is_ok());
    const std::vector<uint8_t> plain = bytes_of(**b, kW);
    CHECK(bad_rows((*a)->view().buffers[kW].ptr, plain.data(), item) == 0);
    CHECK(bytes_of(**a, kW) != plain);  // not vacuous: the rows really moved
    for (int32_t id = 0; id < kW; ++id) CHECK(bytes_of(**a, id) == bytes_of(**b, id));

    // Next to an unpermuted buffer of the same source (later in the program), the permuted one
    // holds that buffer's values permuted, not a stream of its own.
    ir::Program both = with;
    both.buffers.push_back(make_buffer(kW + 1, "wq_plain", ir::BufferKind::Weight, dtype, {kN, kK}, "q.weight"));
    auto c = load_program(both, o);
    REQUIRE(c.is_ok());
    CHECK(bad_rows((*c)->view().buffers[kW].ptr, bytes_of(**c, kW + 1).data(), item) == 0);
    CHECK(bytes_of(**c, kW + 1) != plain);  // keyed by its own id, so the check above is not trivial
  }
}

TEST_CASE("rope_pairs: random weights depend on the seed", "[loader]") {
  ir::Program p = small_program();
  p.buffers.push_back(rope_buffer(ir::DType::BF16));
  LoadOptions o;
  o.random_weights_seed = 1;
  auto a = load_program(p, o);
  o.random_weights_seed = 2;
  auto b = load_program(p, o);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK(bytes_of(**a, kW) != bytes_of(**b, kW));
}

TEST_CASE("rope_pairs: a missing or mismatched tensor gives a plain source's error", "[loader]") {
  // Each case is loaded twice, with and without rope_pairs: same code, same message.
  auto both_errors = [](const std::vector<TensorBytes>& tensors, ir::DType dtype) {
    TempFile w("rope.safetensors");
    auto rope = load_with({rope_buffer(dtype)}, tensors, w);
    ir::Buffer plain = rope_buffer(dtype);
    plain.rope_pairs = 0;
    TempFile w2("rope.safetensors");
    auto ordinary = load_with({plain}, tensors, w2);
    REQUIRE_FALSE(rope.is_ok());
    REQUIRE_FALSE(ordinary.is_ok());
    CHECK(rope.status().code() == ordinary.status().code());
    std::string m = rope.status().message(), o = ordinary.status().message();
    m.replace(m.find(w.path), w.path.size(), "FILE");
    o.replace(o.find(w2.path), w2.path.size(), "FILE");
    CHECK(m == o);
    return std::make_pair(rope.status().code(), m);
  };
  const auto f32 = encode(StDType::F32, ramp(kN * kK, 0.0f));
  SECTION("missing") {
    auto [code, m] = both_errors({}, ir::DType::F32);
    CHECK(code == StatusCode::NotFound);
    CHECK(m == "buffer 10 \"wq\" (source \"q.weight\"): tensor not found in FILE");
  }
  SECTION("transposed") {
    auto [code, m] = both_errors({{"q.weight", StDType::F32, {kK, kN}, f32}}, ir::DType::F32);
    CHECK(code == StatusCode::InvalidArgument);
    CHECK(m == "buffer 10 \"wq\" (source \"q.weight\"): shape mismatch: the buffer is F32 [16, 6], but tensor "
               "\"q.weight\" is F32 [6, 16] in FILE");
  }
  SECTION("dtype") {
    auto [code, m] = both_errors({{"q.weight", StDType::F32, {kN, kK}, f32}}, ir::DType::BF16);
    CHECK(code == StatusCode::InvalidArgument);
    CHECK_THAT(m, Contains("buffer 10 \"wq\" (source \"q.weight\"): dtype mismatch: the buffer is BF16 [16, 6]"));
  }
}

TEST_CASE("rope_pairs: load_program refuses a bad permutation before reading weights", "[loader]") {
  ir::Program p = small_program();
  p.buffers.push_back(rope_buffer(ir::DType::F32, kW, 3));
  LoadOptions o;
  o.random_weights_seed = 1;
  auto img = load_program(p, o);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::ValidationFailed);
  CHECK_THAT(img.status().message(), Contains("[source.rope_pairs] buffer 10 \"wq\": rope_pairs 3"));
}

TEST_CASE("rope_pairs: without validate() the loader still refuses what it cannot index", "[loader]") {
  // bind_weights on its own (as load_program under unsafe_skip_validation_for_tests runs it).
  auto bind = [](const ir::Buffer& b) {
    ir::Program p;
    p.buffers.push_back(b);
    ProgramImage::Storage st;
    st.ptrs.assign(1, nullptr);
    st.bytes.assign(1, 0);
    LoadOptions o;
    o.random_weights_seed = 1;
    const Status s = bind_weights(p, o, st);
    CHECK(s.code() == StatusCode::InvalidArgument);
    return s.message();
  };
  ir::Buffer b = rope_buffer(ir::DType::F32, 0);
  b.rope_pairs = 3;
  CHECK(bind(b) == "buffer 0 \"wq\" (rope_pairs 3): rope_pairs must be an even head_dim >= 2");
  b.rope_pairs = 4;
  b.shape = {6, kK};
  CHECK(bind(b) == "buffer 0 \"wq\" (rope_pairs 4): the buffer must be [N, K] with N a multiple of 4, but its shape "
                   "is [6, 6]");
  b.shape = {kN, kK};
  b.source = "amk:rope_inv_freq?theta=10000&dim=16";
  CHECK(bind(b) == "buffer 0 \"wq\" (rope_pairs 4): only a buffer with one file source can be permuted, this one "
                   "has source \"amk:rope_inv_freq?theta=10000&dim=16\"");
  b.source.reset();
  b.shape = {kN, 2, kK};
  b.stack = {{"gate.weight", false}, {"up.weight", false}};
  CHECK_THAT(bind(b), Contains("only a buffer with one file source can be permuted, this one has stack [\"gate.weight\""));
  b.stack.clear();
  b.shape = {kN, kK};
  b.kind = ir::BufferKind::Const;
  b.source = "q.weight";
  CHECK(rope_pairs_check(b).is_ok());
  b.kind = ir::BufferKind::Activation;
  CHECK(rope_pairs_check(b).message() == "buffer 0 \"wq\" (rope_pairs 4): only a WEIGHT or CONST buffer may be permuted");
}
