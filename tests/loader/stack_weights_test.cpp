// tests/loader/stack_weights_test.cpp: stacked WEIGHT buffers (docs/FOLD.md, "Stacked weight
// sources"): [N, 3, K] built from three tensors (one transposed), the dtype cast, every part error,
// and seeded random parts that equal the unstacked buffers of the same keys. Expected values are
// computed here from the parts, element by element.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "ir/enums.h"
#include "loader/bind_weights.h"
#include "loader/dtype_cast.h"
#include "loader/image_storage.h"
#include "loader/loader.h"
#include "loader/random_weights.h"
#include "loader/safetensors.h"
#include "loader/stack_weights.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

// The fold's shapes in miniature: N (intermediate) differs from K (hidden), so a missed or extra
// transpose changes the shape or the values.
constexpr int64_t kN = 4;
constexpr int64_t kK = 8;
constexpr int32_t kW = kSmallBufCount;  // the stacked buffer's id after small_program()'s buffers

/// `n` values that bf16 cannot hold exactly (so a cast is visible), distinct per `base`.
std::vector<float> fine_ramp(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + 0.001f * static_cast<float>(i + 1);
  return v;
}

ir::Buffer stacked_buffer(ir::DType dtype, int32_t id = kW) {
  ir::Buffer b = make_buffer(id, "w_mlp", ir::BufferKind::Weight, dtype, {kN, 3, kK});
  b.stack = {{"gate.weight", false}, {"up.weight", false}, {"down.weight", true}};
  return b;
}

/// One part as written to the file: its tensor and, for the expectations, its values as stored.
struct Part {
  TensorBytes tensor;
  std::vector<float> stored;  ///< the file's values, read back in the file's dtype
  bool transpose;
};

Part make_part(const std::string& name, StDType dtype, bool transpose, float base) {
  const std::vector<int64_t> shape = transpose ? std::vector<int64_t>{kK, kN} : std::vector<int64_t>{kN, kK};
  Part p{{name, dtype, shape, encode(dtype, fine_ramp(kN * kK, base))}, {}, transpose};
  for (int64_t i = 0; i < kN * kK; ++i)
    p.stored.push_back(dtype_load(*st_dtype_to_ir(dtype), p.tensor.bytes.data(), i));
  return p;
}

/// Row n, column k of a part after its transpose.
float part_at(const Part& p, int64_t n, int64_t k) {
  return p.transpose ? p.stored[static_cast<size_t>(k * kN + n)] : p.stored[static_cast<size_t>(n * kK + k)];
}

/// `v` rounded to `dtype` the way the loader stores it.
float as_dtype(ir::DType dtype, float v) {
  uint8_t bytes[8] = {};
  dtype_store(dtype, bytes, 0, v);
  return dtype_load(dtype, bytes, 0);
}

/// Every element of the stacked buffer at `data` against the parts; counts mismatches.
int check_stack(ir::DType dtype, const void* data, const std::vector<Part>& parts) {
  int bad = 0;
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t k = 0; k < kK; ++k) {
        const float want = as_dtype(dtype, part_at(parts[static_cast<size_t>(p)], n, k));
        const float got = dtype_load(dtype, data, (n * 3 + p) * kK + k);
        if (got != want && ++bad <= 10)
          FAIL_CHECK("w[" << n << ", " << p << ", " << k << "] = " << got << ", want " << want);
      }
  return bad;
}

std::vector<TensorBytes> with_parts(std::vector<TensorBytes> tensors, const std::vector<Part>& parts) {
  for (const Part& p : parts) tensors.push_back(p.tensor);
  return tensors;
}

std::vector<Part> f32_parts() {
  return {make_part("gate.weight", StDType::F32, false, 1.0f), make_part("up.weight", StDType::F32, false, 2.0f),
          make_part("down.weight", StDType::F32, true, 3.0f)};
}

/// stack_from_file on `buffer` with a file of `tensors`.
Status build_from(const ir::Buffer& buffer, const std::vector<TensorBytes>& tensors, std::vector<uint8_t>* out) {
  TempFile w("stack.safetensors");
  REQUIRE(safetensors_write(w.path, tensors).is_ok());
  auto file = SafetensorsFile::open(w.path);
  REQUIRE(file.is_ok());
  out->assign(static_cast<size_t>(buffer.nbytes()), 0);
  Status s = stack_from_file(buffer, *file, out->data());
  if (!s) {
    // The message names the file; strip the temporary path so callers can compare text.
    std::string m = s.message();
    for (size_t at; (at = m.find(w.path)) != std::string::npos;) m.replace(at, w.path.size(), "FILE");
    return Status(s.code(), m);
  }
  return s;
}

}  // namespace

TEST_CASE("stack: load_program builds [N, 3, K] from three tensors, one transposed", "[loader]") {
  const std::vector<Part> parts = f32_parts();
  ir::Program p = small_program();
  p.buffers.push_back(stacked_buffer(ir::DType::F32));
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, with_parts(small_tensors(), parts)).is_ok());
  LoadOptions o;
  o.weights_path = w.path;
  auto img = load_program(p, o);
  INFO(img.status().message());
  REQUIRE(img.is_ok());
  const amk_buffer_t& buf = (*img)->view().buffers[kW];
  CHECK((*img)->buffer_bytes(kW) == kN * 3 * kK * 4);
  CHECK(check_stack(ir::DType::F32, buf.ptr, parts) == 0);
  // The unstacked weights still bind zero-copy next to it.
  const SafetensorsFile* file = (*img)->weights();
  CHECK((*img)->view().buffers[kProj].ptr == file->data(*file->find("proj.weight")));
}

TEST_CASE("stack: parts of other dtypes are cast to the buffer's dtype", "[loader]") {
  // F32 -> BF16 (rounds), BF16 -> BF16 (a copy), F16 -> BF16 through a transpose.
  const std::vector<Part> parts = {make_part("gate.weight", StDType::F32, false, 1.0f),
                                   make_part("up.weight", StDType::BF16, false, 2.0f),
                                   make_part("down.weight", StDType::F16, true, 3.0f)};
  std::vector<uint8_t> out;
  const ir::Buffer b = stacked_buffer(ir::DType::BF16);
  REQUIRE(build_from(b, with_parts({}, parts), &out).is_ok());
  CHECK(check_stack(ir::DType::BF16, out.data(), parts) == 0);
  // The expectation is not vacuous: bf16 really rounds the F32 gate.
  CHECK(as_dtype(ir::DType::BF16, part_at(parts[0], 0, 0)) != part_at(parts[0], 0, 0));
  // And an F32 buffer from the same narrow parts holds them exactly.
  REQUIRE(build_from(stacked_buffer(ir::DType::F32), with_parts({}, parts), &out).is_ok());
  CHECK(check_stack(ir::DType::F32, out.data(), parts) == 0);
}

TEST_CASE("stack: a missing part is NotFound naming the buffer, the part and the key", "[loader]") {
  std::vector<Part> parts = f32_parts();
  parts.erase(parts.begin() + 1);  // no up.weight
  ir::Program p = small_program();
  p.buffers.push_back(stacked_buffer(ir::DType::F32));
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, with_parts(small_tensors(), parts)).is_ok());
  LoadOptions o;
  o.weights_path = w.path;
  auto img = load_program(p, o);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::NotFound);
  CHECK(img.status().message() ==
        "buffer 10 \"w_mlp\" stack[1] (source \"up.weight\"): tensor not found in " + w.path);
}

TEST_CASE("stack: a part of the wrong shape, rank or dtype names the part and both shapes", "[loader]") {
  std::vector<Part> parts = f32_parts();
  const ir::Buffer b = stacked_buffer(ir::DType::F32);
  std::vector<uint8_t> out;
  auto error_with = [&](size_t i, TensorBytes t) {
    std::vector<TensorBytes> tensors = with_parts({}, parts);
    tensors[i] = std::move(t);
    const Status s = build_from(b, tensors, &out);
    CHECK(s.code() == StatusCode::InvalidArgument);
    return s.message();
  };
  const std::vector<uint8_t> f32_bytes = encode(StDType::F32, fine_ramp(kN * kK, 0.0f));
  // down_proj as stored is [K, N]; given already transposed ([N, K]), its transpose no longer fits.
  CHECK(error_with(2, {"down.weight", StDType::F32, {kN, kK}, f32_bytes}) ==
        "buffer 10 \"w_mlp\" stack[2] (source \"down.weight\", transposed): shape mismatch: the buffer is F32 "
        "[4, 3, 8], so each part must be [4, 8] after its transpose, but tensor \"down.weight\" is F32 [4, 8] "
        "(transposed: [8, 4]) in FILE");
  CHECK(error_with(0, {"gate.weight", StDType::F32, {kK, kN}, f32_bytes}) ==
        "buffer 10 \"w_mlp\" stack[0] (source \"gate.weight\"): shape mismatch: the buffer is F32 [4, 3, 8], so each "
        "part must be [4, 8] after its transpose, but tensor \"gate.weight\" is F32 [8, 4] in FILE");
  CHECK(error_with(1, {"up.weight", StDType::F32, {1, kN, kK}, f32_bytes}) ==
        "buffer 10 \"w_mlp\" stack[1] (source \"up.weight\"): a part must be rank 2, but tensor \"up.weight\" is F32 "
        "[1, 4, 8] in FILE");
  const std::vector<uint8_t> f64_bytes(static_cast<size_t>(kN * kK * 8), 0);
  CHECK(error_with(1, {"up.weight", StDType::F64, {kN, kK}, f64_bytes}) ==
        "buffer 10 \"w_mlp\" stack[1] (source \"up.weight\"): tensor \"up.weight\" is F64 [4, 8] in FILE; F64 is not "
        "an IR dtype, so it cannot be cast to F32");
  // A buffer whose shape does not hold the stack (validate() refuses it first in load_program).
  ir::Buffer flat = b;
  flat.shape = {kN, 2, kK};
  CHECK(build_from(flat, with_parts({}, parts), &out).message() ==
        "buffer 10 \"w_mlp\": a stack of 3 parts needs a buffer of shape [N, 3, K], but its shape is [4, 2, 8]");
}

TEST_CASE("stack: load_program refuses a stack that does not fit its buffer before reading weights", "[loader]") {
  ir::Program p = small_program();
  p.buffers.push_back(stacked_buffer(ir::DType::F32));
  p.buffers.back().shape = {kN, 2, kK};
  LoadOptions o;
  o.random_weights_seed = 1;
  auto img = load_program(p, o);
  REQUIRE_FALSE(img.is_ok());
  CHECK(img.status().code() == StatusCode::ValidationFailed);
  CHECK_THAT(img.status().message(), Contains("[source.stack] buffer 10 \"w_mlp\""));
}

TEST_CASE("stack: without a weights file the error names the stack", "[loader]") {
  ir::Program p;
  p.buffers.push_back(stacked_buffer(ir::DType::F32, 0));
  ProgramImage::Storage st;
  st.ptrs.assign(1, nullptr);
  st.bytes.assign(1, 0);
  const Status s = bind_weights(p, LoadOptions{}, st);
  CHECK(s.code() == StatusCode::InvalidArgument);
  CHECK(s.message() == "buffer 0 \"w_mlp\" (stack [\"gate.weight\", \"up.weight\", \"down.weight\" (transposed)]) "
                       "needs a weights file: set LoadOptions.weights_path or random_weights_seed");
}

namespace {

// small_program() plus unstacked gate, up and down (as stored: [K, N]) and the stack of the three.
ir::Program program_with_unstacked(ir::DType dtype) {
  ir::Program p = small_program();
  p.buffers.push_back(make_buffer(kW, "gate", ir::BufferKind::Weight, dtype, {kN, kK}, "gate.weight"));
  p.buffers.push_back(make_buffer(kW + 1, "up", ir::BufferKind::Weight, dtype, {kN, kK}, "up.weight"));
  p.buffers.push_back(make_buffer(kW + 2, "down", ir::BufferKind::Weight, dtype, {kK, kN}, "down.weight"));
  p.buffers.push_back(stacked_buffer(dtype, kW + 3));
  return p;
}

std::vector<uint8_t> bytes_of(const ProgramImage& img, int32_t id) {
  const auto* p = static_cast<const uint8_t*>(img.view().buffers[id].ptr);
  return std::vector<uint8_t>(p, p + img.buffer_bytes(id));
}

}  // namespace

TEST_CASE("stack: random weights of a stacked buffer equal those of the unstacked buffers", "[loader]") {
  for (ir::DType dtype : {ir::DType::BF16, ir::DType::F32, ir::DType::I8}) {
    INFO(ir::dtype_name(dtype));
    const ir::Program p = program_with_unstacked(dtype);
    LoadOptions o;
    o.random_weights_seed = 17;
    auto img = load_program(p, o);
    INFO(img.status().message());
    REQUIRE(img.is_ok());
    const int32_t stack_id = kW + 3;
    const auto& buf = (*img)->view().buffers;
    int bad = 0;
    const size_t item = static_cast<size_t>(ir::dtype_bits(dtype) / 8);
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t part = 0; part < 3; ++part)
        for (int64_t k = 0; k < kK; ++k) {
          // The unstacked element that buf[n, part, k] must equal: down is read transposed.
          const int64_t src = part == 2 ? k * kN + n : n * kK + k;
          const auto* want = static_cast<const uint8_t*>(buf[kW + part].ptr) + static_cast<size_t>(src) * item;
          const auto* got = static_cast<const uint8_t*>(buf[stack_id].ptr) +
                            static_cast<size_t>((n * 3 + part) * kK + k) * item;
          if (std::memcmp(want, got, item) != 0) ++bad;
        }
    CHECK(bad == 0);
    // Not trivially equal: the three parts hold different numbers.
    CHECK(std::memcmp(buf[kW].ptr, buf[kW + 1].ptr, static_cast<size_t>(kN * kK) * item) != 0);

    // Adding the stack changes no unstacked buffer's values (they stay keyed by their ids).
    ir::Program without = p;
    without.buffers.pop_back();
    auto img2 = load_program(without, o);
    REQUIRE(img2.is_ok());
    for (int32_t id = 0; id < stack_id; ++id)
      if (p.buffers[static_cast<size_t>(id)].kind == ir::BufferKind::Weight)
        CHECK(bytes_of(**img, id) == bytes_of(**img2, id));
  }
}

TEST_CASE("stack: random parts without unstacked buffers are keyed by source, deterministically", "[loader]") {
  ir::Program alone = small_program();
  alone.buffers.push_back(stacked_buffer(ir::DType::BF16));
  LoadOptions o;
  o.random_weights_seed = 17;
  auto a = load_program(alone, o);
  auto b = load_program(alone, o);
  o.random_weights_seed = 18;
  auto c = load_program(alone, o);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  REQUIRE(c.is_ok());
  CHECK(bytes_of(**a, kW) == bytes_of(**b, kW));
  CHECK(bytes_of(**a, kW) != bytes_of(**c, kW));
  // Part 0 is gate.weight's source-keyed stream, the same in any program that lacks an unstacked
  // gate: here a program with the stack at another id.
  ir::Program moved = small_program();
  moved.buffers.push_back(make_buffer(kW, "pad", ir::BufferKind::Weight, ir::DType::F32, {2, 2}, "pad.weight"));
  moved.buffers.push_back(stacked_buffer(ir::DType::BF16, kW + 1));
  o.random_weights_seed = 17;
  auto m = load_program(moved, o);
  REQUIRE(m.is_ok());
  CHECK(bytes_of(**m, kW + 1) == bytes_of(**a, kW));
  // The key of a source without an unstacked buffer differs from every buffer id's.
  const RandomKey key = random_key_of_source(alone, "gate.weight");
  for (const ir::Buffer& buffer : alone.buffers) CHECK(key.value != random_key_of(buffer).value);
  CHECK(random_key_of_source(alone, "proj.weight").value == random_key_of(alone.buffers[kProj]).value);
}

namespace {

// The pre-stack generator of random_weights.cpp, restated: element i < 2^16 of an F32 matrix
// buffer `id` with last dimension `k` (chunk 0: splitmix64 keyed by (seed, id + 1), polar normals).
std::vector<float> reference_f32(uint64_t seed, int32_t id, int64_t k, size_t count) {
  struct SplitMix {
    uint64_t s;
    uint64_t next() {
      uint64_t z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    }
    double symmetric() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }
  };
  SplitMix key{seed ^ (0x5851f42d4c957f2dull * (static_cast<uint64_t>(id) + 1))};
  SplitMix rng{key.next() ^ 0xd1342543de82ef95ull};  // chunk 0
  rng.next();
  std::vector<float> out;
  const double std = 1.0 / std::sqrt(static_cast<double>(k));
  while (out.size() < count) {
    double u, v, s;
    do {
      u = rng.symmetric();
      v = rng.symmetric();
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std * std::sqrt(-2.0 * std::log(s) / s);
    out.push_back(static_cast<float>(u * m));
    out.push_back(static_cast<float>(v * m));
  }
  out.resize(count);
  return out;
}

}  // namespace

TEST_CASE("random weights: a buffer keeps the values it had before stacks", "[loader]") {
  ir::Buffer f32 = make_buffer(5, "w", ir::BufferKind::Weight, ir::DType::F32, {16, 8}, "w.weight");
  std::vector<float> got(16 * 8, 0.0f);
  random_fill(f32, 3, got.data());
  const std::vector<float> want = reference_f32(3, 5, 8, got.size());
  CHECK(got == want);
}

TEST_CASE("random weights: a buffer is keyed by its id, as before stacks", "[loader]") {
  // random_fill(b) is random_fill_tensor keyed by id + 1 (the pre-stack stream key), whatever
  // the buffer's source; a different key gives different values.
  ir::Buffer b = make_buffer(5, "w", ir::BufferKind::Weight, ir::DType::BF16, {16, 8}, "w.weight");
  std::vector<uint8_t> via_buffer(static_cast<size_t>(b.nbytes()), 0), via_tensor = via_buffer, other = via_buffer;
  random_fill(b, 3, via_buffer.data());
  random_fill_tensor(b.dtype, b.shape, RandomKey{6}, 3, via_tensor.data());
  random_fill_tensor(b.dtype, b.shape, RandomKey{7}, 3, other.data());
  CHECK(via_buffer == via_tensor);
  CHECK(via_buffer != other);
  b.source = "another.weight";
  std::vector<uint8_t> renamed(via_buffer.size(), 0);
  random_fill(b, 3, renamed.data());
  CHECK(renamed == via_buffer);
}
