// tests/fuzz/fuzz_program_json.cpp: libFuzzer target for the program JSON reader (ir/json_read*).
// The checks live in fuzz_entry_points.h, shared with the regression test; a failed check aborts so
// libFuzzer keeps the input, like a crash or a sanitizer report would.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string broke = amk::fuzz::program_json_one(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broke.empty()) {
    std::fprintf(stderr, "fuzz_program_json: %s\n", broke.c_str());
    std::abort();
  }
  return 0;
}
