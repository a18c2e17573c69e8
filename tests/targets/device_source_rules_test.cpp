// tests/targets/device_source_rules_test.cpp: rules the compiler cannot check in device code.
// 1. Micro-kernels (instructions/*.cuh) never use __syncthreads, blockDim or the whole-block
// helpers of targets/gpu.h: on CUDA the block's last warp is the loader (block_geometry.h), which
// never joins the compute warps' barriers, so a whole-block barrier in a micro-kernel would hang
// the kernel and a blockDim-sized loop would skip or race. They use compute_barrier(),
// block_threads(), compute_warps(), compute_sum() ... (device_common.cuh).
// 2. The device sources never spell the warp size as a
// literal 32 (AMD CDNA wavefronts are 64 wide: gpu::kWarpSize is the only place the width lives).
// Scans instructions/*.cuh, vm/cuda/*.cu and targets/gpu.h with comments and string literals
// removed, for a number token 32 (32u, 32L... included). The one allowed occurrence is the CUDA
// definition `kWarpSize = 32` in gpu.h. A literal 32 that is not a warp size (a bit count, say)
// must be named instead (or computed), which keeps this check simple and strict.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// `src` with // and /* */ comments and "..." / '...' literals blanked (newlines kept).
std::string strip_comments_and_strings(const std::string& src) {
  std::string out = src;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const size_t end = out.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? out.size() : end + 2;
      for (; i < stop; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    } else if (out[i] == '"' || out[i] == '\'') {
      const char q = out[i];
      for (++i; i < out.size() && out[i] != q && out[i] != '\n'; ++i) {
        if (out[i] == '\\' && i + 1 < out.size()) out[i++] = ' ';
        out[i] = ' ';
      }
    }
  }
  return out;
}

std::string read_stripped(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return strip_comments_and_strings(ss.str());
}

/// "file:line: text" for each use of a whole-block primitive in `file`'s code.
std::vector<std::string> whole_block_uses(const fs::path& file) {
  static const char* const kBanned[] = {"__syncthreads", "blockDim", "gpu::block_", "gpu::warp_count", "__syncwarp"};
  std::istringstream lines(read_stripped(file));
  std::vector<std::string> hits;
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n)
    for (const char* b : kBanned)
      if (line.find(b) != std::string::npos) hits.push_back(file.string() + ":" + std::to_string(n) + ": " + line);
  return hits;
}

/// "file:line: text" for each number token equal to 32 (with any u/l suffix).
std::vector<std::string> literal_32s(const fs::path& file) {
  std::istringstream lines(read_stripped(file));
  std::vector<std::string> hits;
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find("kWarpSize = 32") != std::string::npos) continue;  // the CUDA definition itself
    for (size_t i = 0; i < line.size(); ++i) {
      const bool starts = std::isdigit(static_cast<unsigned char>(line[i])) &&
                          (i == 0 || !(std::isalnum(static_cast<unsigned char>(line[i - 1])) || line[i - 1] == '_' ||
                                       line[i - 1] == '.'));
      if (!starts) continue;
      size_t j = i;
      while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_' || line[j] == '.')) ++j;
      std::string tok = line.substr(i, j - i);
      while (!tok.empty() && std::string("uUlL").find(tok.back()) != std::string::npos) tok.pop_back();
      if (tok == "32") hits.push_back(file.string() + ":" + std::to_string(n) + ": " + line);
      i = j;
    }
  }
  return hits;
}

std::vector<fs::path> device_sources() {
  const fs::path root = AMK_SOURCE_DIR;
  std::vector<fs::path> files{root / "targets" / "gpu.h"};
  for (const auto& [dir, ext] : {std::pair{"instructions", ".cuh"}, std::pair{"vm/cuda", ".cu"}})
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ext) files.push_back(e.path());
  return files;
}

}  // namespace

TEST_CASE("micro-kernels synchronise and size loops over the compute warps only", "[targets]") {
  int scanned = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AMK_SOURCE_DIR) / "instructions")) {
    if (e.path().extension() != ".cuh") continue;
    ++scanned;
    for (const std::string& hit : whole_block_uses(e.path()))
      FAIL_CHECK("whole-block primitive in a micro-kernel (use device_common.cuh's compute_*): " << hit);
  }
  CHECK(scanned > 20);
  // The scan itself: code is caught, comments are not.
  const fs::path tmp = fs::path(AMK_BINARY_DIR) / "whole_block_probe.cuh";
  {
    std::ofstream out(tmp);
    out << "// __syncthreads() here is prose\nint a = blockDim.x;\nfloat s = gpu::block_sum(v, r);\n";
  }
  const auto hits = whole_block_uses(tmp);
  fs::remove(tmp);
  REQUIRE(hits.size() == 2);
  CHECK_THAT(hits[0], Catch::Contains(":2: int a = blockDim.x;"));
  CHECK_THAT(hits[1], Catch::Contains(":3: float s = gpu::block_sum"));
}

TEST_CASE("device sources: no literal 32 (use gpu::kWarpSize)", "[targets]") {
  const auto files = device_sources();
  REQUIRE(files.size() > 20);  // the scan found the micro-kernels
  for (const auto& f : files)
    for (const std::string& hit : literal_32s(f)) FAIL_CHECK("literal 32 in device code: " << hit);
}

TEST_CASE("device sources: the literal-32 scan sees through comments but not code", "[targets]") {
  const std::string stripped = strip_comments_and_strings("a // 32\nb /* 32\n */ c \"32\" '3' 32");
  CHECK(stripped.find("32") == stripped.rfind("32"));  // only the code token is left
  CHECK(stripped.substr(stripped.size() - 2) == "32");
  CHECK(std::count(stripped.begin(), stripped.end(), '\n') == 2);
  CHECK(stripped.find('a') == 0);
  const fs::path tmp = fs::path(AMK_BINARY_DIR) / "no_literal_warp_size_probe.cuh";
  {
    std::ofstream out(tmp);
    out << "// lanes: 32\nint a = lane & 31;\nint b = x / 32u;\nint c = int32_t(0) + 0x32 + 1.32f;\n";
  }
  const auto hits = literal_32s(tmp);
  fs::remove(tmp);
  REQUIRE(hits.size() == 1);
  CHECK_THAT(hits[0], Catch::Contains(":3: int b = x / 32u;"));
}
