// tests/loader/synth_constants_test.cpp: `amk:` constants. The rope tables are compared with
// values computed here independently (long double, the HF torch.where formulation), for the
// default table and for Llama 3.1's scaling config.
#include <catch2/catch.hpp>

#include <cmath>

#include "loader/dtype_cast.h"
#include "loader/loader.h"
#include "loader/synth_constants.h"
#include "loader_test_util.h"

using Catch::Matchers::Contains;
using namespace amk;
using namespace amk::loader;
using namespace amk::loader::test;

namespace {

/// HF's _compute_llama3_parameters, written as its vectorized where() steps, in long double.
std::vector<long double> reference_inv_freq(long double theta, int dim, bool llama3, long double factor = 1,
                                            long double low = 1, long double high = 4, long double orig = 8192) {
  std::vector<long double> out;
  const long double pi = 3.141592653589793238462643383279502884L;
  for (int k = 0; k < dim; k += 2) {
    const long double inv = 1.0L / std::pow(theta, static_cast<long double>(k) / dim);
    if (!llama3) {
      out.push_back(inv);
      continue;
    }
    const long double low_wl = orig / low, high_wl = orig / high;
    const long double wavelen = 2 * pi / inv;
    const long double inv_llama = wavelen > low_wl ? inv / factor : inv;
    const long double smooth = (orig / wavelen - low) / (high - low);
    const long double smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama;
    const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
    out.push_back(medium ? smoothed : inv_llama);
  }
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<long double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("i = " << i);
    CHECK(static_cast<long double>(got[i]) == Approx(static_cast<double>(want[i])).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("synth: default rope inverse frequencies", "[loader]") {
  auto v = synth_values("amk:rope_inv_freq?theta=10000&dim=32");
  REQUIRE(v.is_ok());
  check_close(*v, reference_inv_freq(10000, 32, false));
  CHECK((*v)[0] == 1.0f);
  CHECK((*v)[8] == Approx(0.01));  // 10000^(-16/32)
}

TEST_CASE("synth: llama3-scaled rope inverse frequencies (Llama 3.1 8B config)", "[loader]") {
  const std::string src =
      "amk:rope_inv_freq?theta=500000&dim=128&rope_type=llama3&factor=8&low_freq_factor=1&high_freq_factor=4"
      "&original_max_position_embeddings=8192";
  auto v = synth_values(src);
  REQUIRE(v.is_ok());
  const auto want = reference_inv_freq(500000, 128, true, 8, 1, 4, 8192);
  check_close(*v, want);
  // The three bands: high frequencies kept, low frequencies divided by 8, a smooth band between.
  CHECK((*v)[0] == 1.0f);
  const double plain_last = std::pow(500000.0, -126.0 / 128.0);
  CHECK((*v)[63] == Approx(plain_last / 8).epsilon(1e-6));
  int kept = 0, scaled = 0, smoothed = 0;
  for (int i = 0; i < 64; ++i) {
    const double plain = std::pow(500000.0, -2.0 * i / 128);
    if ((*v)[i] == Approx(plain).epsilon(1e-6)) ++kept;
    else if ((*v)[i] == Approx(plain / 8).epsilon(1e-6)) ++scaled;
    else ++smoothed;
  }
  CHECK(kept > 0);
  CHECK(scaled > 0);
  CHECK(smoothed > 0);
  CHECK(kept + scaled + smoothed == 64);
}

TEST_CASE("synth: bad amk: sources are refused naming the argument", "[loader]") {
  auto err = [](const std::string& src) {
    auto v = synth_values(src);
    INFO(src);
    REQUIRE_FALSE(v.is_ok());
    return v.status().message();
  };
  CHECK_THAT(err("amk:nope?x=1"), Contains("unknown generator \"nope\""));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000"), Contains("\"theta\" and \"dim\""));
  CHECK_THAT(err("amk:rope_inv_freq?theta=abc&dim=32"), Contains("\"theta\" = \"abc\" is not a finite number"));
  CHECK_THAT(err("amk:rope_inv_freq?theta=1e999&dim=32"), Contains("not a finite number"));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=31"), Contains("dim must be an even integer"));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=32&bogus=1"), Contains("unknown argument \"bogus\""));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=32&dim=64"), Contains("\"dim\" is repeated"));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=32&factor=8"), Contains("\"factor\" needs rope_type=llama3"));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=32&rope_type=llama3&factor=8"),
             Contains("rope_type=llama3 needs \"low_freq_factor\""));
  CHECK_THAT(err("amk:rope_inv_freq?theta=10000&dim=32&rope_type=yarn"), Contains("rope_type \"yarn\""));
}

TEST_CASE("synth: load_program synthesizes amk: CONST buffers, with a file or random weights", "[loader]") {
  ir::Program p = small_program();
  const int32_t id = kSmallBufCount;
  p.buffers.push_back(make_buffer(id, "rope_inv_freq", ir::BufferKind::Const, ir::DType::F32, {16},
                                  "amk:rope_inv_freq?theta=10000&dim=32"));
  const auto want = reference_inv_freq(10000, 32, false);

  LoadOptions seeded;
  seeded.random_weights_seed = 7;
  auto a = load_program(p, seeded);
  REQUIRE(a.is_ok());
  TempFile w("w.safetensors");
  REQUIRE(safetensors_write(w.path, small_tensors()).is_ok());
  LoadOptions from_file;
  from_file.weights_path = w.path;
  auto b = load_program(p, from_file);
  REQUIRE(b.is_ok());
  for (const auto* img : {a->get(), b->get()}) {
    const void* ptr = img->view().buffers[id].ptr;
    REQUIRE(ptr != nullptr);
    for (int i = 0; i < 16; ++i) CHECK(dtype_load(ir::DType::F32, ptr, i) == Approx(static_cast<double>(want[i])));
  }

  SECTION("a non-F32 buffer is refused") {
    p.buffers.back().dtype = ir::DType::BF16;
    auto r = load_program(p, seeded);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Contains("buffer 10 \"rope_inv_freq\""));
    CHECK_THAT(r.status().message(), Contains("synthesized constants are F32, but the buffer is BF16"));
  }
  SECTION("a buffer of the wrong size is refused") {
    p.buffers.back().shape = {32};
    auto r = load_program(p, seeded);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::InvalidArgument);
    CHECK_THAT(r.status().message(), Contains("the generator makes 16 values, but the buffer has shape [32]"));
  }
}
