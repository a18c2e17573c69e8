// tests/loader/safetensors_test.cpp: the safetensors reader: a good file, every corruption case
// (each message names the tensor or field), truncation at every byte, random byte flips, and the
// real tiny_llama fixture.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "loader/dtype_cast.h"
#include "loader/safetensors.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using amk::loader::test::TempFile;

namespace {

std::vector<uint8_t> le64(uint64_t v) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
  return out;
}

/// A file: length prefix + header text + `data` bytes.
std::vector<uint8_t> file_bytes(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes);
  const std::vector<uint8_t> len = le64(header.size());
  std::copy(len.begin(), len.end(), out.begin());
  std::copy(header.begin(), header.end(), out.begin() + 8);
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i * 7 + 1);
  return out;
}

/// Overwrite `path` with `bytes`. pwrite + ftruncate rather than O_TRUNC: ext4 flushes a file
/// truncated to zero and rewritten (auto_da_alloc), which costs milliseconds per call.
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  const bool ok = (bytes.empty() || ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())) &&
                  ::ftruncate(fd, static_cast<off_t>(bytes.size())) == 0;
  ::close(fd);
  REQUIRE(ok);
}

Result<SafetensorsFile> open_bytes(const std::vector<uint8_t>& bytes) {
  TempFile tmp("st.safetensors");
  write_bytes(tmp.path, bytes);
  return SafetensorsFile::open(tmp.path);
}

/// Expect `header` (with `data` bytes after it) to be refused with a message containing `what`.
void expect_error(const std::string& header, size_t data, const std::string& what) {
  auto f = open_bytes(file_bytes(header, data));
  INFO("header: " << header);
  REQUIRE_FALSE(f.is_ok());
  CHECK(f.status().code() == StatusCode::ParseError);
  CHECK_THAT(f.status().message(), Contains(what));
}

/// A well-formed two-tensor file (F32 "a" [2, 2] and BF16 "b" [3]).
std::vector<TensorBytes> good_tensors() {
  return {{"a", StDType::F32, {2, 2}, test::encode(StDType::F32, {1.0f, 2.0f, 3.0f, 4.5f})},
          {"b", StDType::BF16, {3}, test::encode(StDType::BF16, {0.5f, -1.0f, 8.0f})}};
}

}  // namespace

TEST_CASE("safetensors: writes and reads back a good file", "[loader]") {
  TempFile tmp("good.safetensors");
  REQUIRE(safetensors_write(tmp.path, good_tensors(), {{"format", "pt"}}).is_ok());
  auto f = SafetensorsFile::open(tmp.path);
  REQUIRE(f.is_ok());
  CHECK(f->names() == std::vector<std::string>{"a", "b"});
  CHECK(f->metadata().at("format") == "pt");
  const TensorInfo* a = f->find("a");
  REQUIRE(a != nullptr);
  CHECK(a->dtype == StDType::F32);
  CHECK(a->shape == std::vector<int64_t>{2, 2});
  CHECK(a->numel == 4);
  CHECK(a->nbytes() == 16);
  CHECK(dtype_load(ir::DType::F32, f->data(*a), 3) == 4.5f);
  const TensorInfo* b = f->find("b");
  REQUIRE(b != nullptr);
  CHECK(b->dtype == StDType::BF16);
  CHECK(dtype_load(ir::DType::BF16, f->data(*b), 1) == -1.0f);
  CHECK(dtype_load(ir::DType::BF16, f->data(*b), 2) == 8.0f);
  CHECK(f->find("c") == nullptr);
  // Header order is kept.
  CHECK(f->tensors()[0].name == "a");
  // Moving keeps the mapping valid.
  SafetensorsFile moved = std::move(f).value();
  CHECK(dtype_load(ir::DType::F32, moved.data(*moved.find("a")), 0) == 1.0f);
}

TEST_CASE("safetensors: file-level corruption is refused with a clear message", "[loader]") {
  SECTION("missing file") {
    auto f = SafetensorsFile::open("/nonexistent/amk/model.safetensors");
    REQUIRE_FALSE(f.is_ok());
    CHECK(f.status().code() == StatusCode::IoError);
    CHECK_THAT(f.status().message(), Contains("/nonexistent/amk/model.safetensors"));
  }
  SECTION("shorter than 8 bytes") {
    auto f = open_bytes({1, 2, 3, 4, 5});
    REQUIRE_FALSE(f.is_ok());
    CHECK_THAT(f.status().message(), Contains("shorter than the 8-byte header length"));
  }
  SECTION("header length beyond the file") {
    std::vector<uint8_t> bytes = le64(1000);
    for (char c : std::string("{}")) bytes.push_back(static_cast<uint8_t>(c));
    auto f = open_bytes(bytes);
    REQUIRE_FALSE(f.is_ok());
    CHECK_THAT(f.status().message(), Contains("header length 1000 exceeds the file"));
  }
  SECTION("absurd header length") {
    auto f = open_bytes(le64(1ull << 40));
    REQUIRE_FALSE(f.is_ok());
    CHECK_THAT(f.status().message(), Contains("absurd"));
  }
  SECTION("empty header") { expect_error("", 0, "not valid JSON"); }
  SECTION("not JSON") { expect_error("{\"a\": {\"dtype\": F32}}", 0, "header, in tensor \"a\": not valid JSON"); }
  SECTION("not an object") { expect_error("[1, 2]", 0, "not a JSON object"); }
  SECTION("nested too deep") { expect_error(std::string(100000, '[') + std::string(100000, ']'), 0, "deeper than"); }
  SECTION("bad metadata") { expect_error("{\"__metadata__\": {\"k\": 5}}", 0, "__metadata__: value of \"k\" is not a string"); }
  SECTION("metadata not an object") { expect_error("{\"__metadata__\": []}", 0, "__metadata__: is not an object"); }
}

TEST_CASE("safetensors: every malformed tensor entry names the tensor and field", "[loader]") {
  const std::string ok_rest = "\"shape\": [2], \"data_offsets\": [0, 8]}";
  SECTION("entry not an object") { expect_error("{\"w\": 5}", 0, "tensor \"w\": entry is not an object"); }
  SECTION("missing dtype") { expect_error("{\"w\": {" + ok_rest + "}", 8, "tensor \"w\": missing \"dtype\""); }
  SECTION("dtype not a string") {
    expect_error("{\"w\": {\"dtype\": 3, " + ok_rest + "}", 8, "tensor \"w\": \"dtype\" is not a string");
  }
  SECTION("unknown dtype") {
    expect_error("{\"w\": {\"dtype\": \"Q7\", " + ok_rest + "}", 8, "tensor \"w\": unknown dtype \"Q7\"");
  }
  SECTION("missing shape") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 8]}}", 8, "tensor \"w\": missing \"shape\"");
  }
  SECTION("shape not an array") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": 2, \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": \"shape\" is not an array");
  }
  SECTION("negative shape") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": shape[0] is negative (-2)");
  }
  SECTION("fractional shape") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [1, 2.5], \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": shape[1] is not an integer");
  }
  SECTION("non-finite shape") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [1e400], \"data_offsets\": [0, 8]}}", 8,
                 "in tensor \"w\": not valid JSON");
  }
  SECTION("shape as string") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": shape[0] is not a number");
  }
  SECTION("element count overflows") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": \"shape\" [4294967296,4294967296] overflows");
  }
  SECTION("missing data_offsets") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [2]}}", 8, "tensor \"w\": missing \"data_offsets\"");
  }
  SECTION("data_offsets of the wrong arity") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 8,
                 "tensor \"w\": \"data_offsets\" is not an array of two integers");
  }
  SECTION("negative offset") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}", 8,
                 "tensor \"w\": data_offsets[0] is negative");
  }
  SECTION("offsets out of order") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8,
                 "tensor \"w\": data_offsets [8, 0] are out of order");
  }
  SECTION("offsets beyond the data section") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 8,
                 "tensor \"w\": data_offsets [4, 12] lie beyond the data section (8 bytes)");
  }
  SECTION("byte size disagrees with shape and dtype") {
    expect_error("{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8,
                 "tensor \"w\": data_offsets [0, 8] hold 8 bytes, but 3 elements of F32 need 12");
  }
  SECTION("overlapping tensors") {
    expect_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                 12, "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" [0, 8]");
  }
  SECTION("a tensor inside another") {
    expect_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]},"
                 " \"c\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [12, 16]}}",
                 16, "overlap tensor \"a\"");
  }
  SECTION("duplicate tensor names") {
    expect_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                 " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                 8, "tensor \"a\": appears twice");
  }
}

TEST_CASE("safetensors: zero-size tensors and adjacent ranges are fine", "[loader]") {
  auto f = open_bytes(file_bytes("{\"e\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [4, 4]},"
                                 " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                                 " \"b\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [4, 12]}}",
                                 12));
  REQUIRE(f.is_ok());
  CHECK(f->find("e")->numel == 0);
  CHECK(f->find("b")->numel == 1);
  CHECK_FALSE(st_dtype_to_ir(f->find("b")->dtype).has_value());
}

TEST_CASE("safetensors: truncation at every byte and random byte flips never crash", "[loader]") {
  TempFile good("good.safetensors");
  REQUIRE(safetensors_write(good.path, good_tensors()).is_ok());
  std::vector<uint8_t> bytes;
  {
    std::ifstream in(good.path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  REQUIRE(n + 8 < bytes.size());

  TempFile tmp("cut.safetensors");
  // Every strict prefix of the file is refused.
  for (size_t k = 0; k < bytes.size(); ++k) {
    write_bytes(tmp.path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(k)));
    auto f = SafetensorsFile::open(tmp.path);
    INFO("prefix of " << k << " bytes");
    CHECK_FALSE(f.is_ok());
  }
  // A header cut at every byte (with the length field saying so, and no data) is refused.
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  for (size_t k = 0; k < n; ++k) {
    auto f = open_bytes(file_bytes(header.substr(0, k), 0));
    INFO("header cut to " << k << " bytes");
    CHECK_FALSE(f.is_ok());
  }
  // Random flips anywhere: either refused, or every tensor lies inside the file.
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::vector<uint8_t> bad = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      // Mostly the length field and header, where the parser is exercised.
      const size_t limit = (rng() % 4 == 0) ? bad.size() : 8 + n;
      bad[rng() % limit] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    write_bytes(tmp.path, bad);
    auto f = SafetensorsFile::open(tmp.path);
    if (!f.is_ok()) {
      CHECK_FALSE(f.status().message().empty());
      continue;
    }
    ++accepted;
    uint64_t sum = 0;
    for (const TensorInfo& t : f->tensors()) {
      CHECK(t.end <= f->file_bytes());
      const auto* p = static_cast<const uint8_t*>(f->data(t));
      for (uint64_t i = 0; i < t.nbytes(); ++i) sum += p[i];
    }
    CHECK(sum < (1ull << 40));
  }
  CHECK(accepted > 0);  // flips inside the data section keep the file valid
}

TEST_CASE("safetensors: the tiny_llama fixture has the HF Llama names, shapes and dtypes", "[loader]") {
  auto f = SafetensorsFile::open(std::string(AMK_SOURCE_DIR) + "/tests/fixtures/tiny_llama/model.safetensors");
  REQUIRE(f.is_ok());
  CHECK(f->tensors().size() == 3 + 4 * 9);
  auto check = [&](const std::string& name, std::vector<int64_t> shape) {
    INFO(name);
    const TensorInfo* t = f->find(name);
    REQUIRE(t != nullptr);
    CHECK(t->dtype == StDType::BF16);
    CHECK(t->shape == shape);
  };
  check("model.embed_tokens.weight", {1024, 256});
  check("lm_head.weight", {1024, 256});
  check("model.norm.weight", {256});
  for (int l = 0; l < 4; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    check(p + "self_attn.q_proj.weight", {256, 256});  // 8 heads x head_dim 32
    check(p + "self_attn.k_proj.weight", {64, 256});   // 2 kv heads x 32
    check(p + "self_attn.v_proj.weight", {64, 256});
    check(p + "self_attn.o_proj.weight", {256, 256});
    check(p + "mlp.gate_proj.weight", {256, 256});  // intermediate_size 256
    check(p + "mlp.up_proj.weight", {256, 256});
    check(p + "mlp.down_proj.weight", {256, 256});
    check(p + "input_layernorm.weight", {256});
    check(p + "post_attention_layernorm.weight", {256});
  }
  // Norm weights were made as 1 + 0.1 * randn (tests/fixtures/make_golden.py).
  const TensorInfo* norm = f->find("model.norm.weight");
  REQUIRE(norm != nullptr);
  double mean = 0.0;
  for (int64_t i = 0; i < norm->numel; ++i) mean += dtype_load(ir::DType::BF16, f->data(*norm), i);
  CHECK(mean / static_cast<double>(norm->numel) == Approx(1.0).margin(0.05));
}
