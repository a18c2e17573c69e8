// tests/fuzz/fuzz_validate.cpp: libFuzzer target for ir::validate() on every program the JSON reader
// accepts (seeded with the example and golden programs, so mutations stay mostly loadable).
// The checks live in fuzz_entry_points.h, shared with the regression test; a failed check aborts so
// libFuzzer keeps the input, like a crash or a sanitizer report would.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string broke = amk::fuzz::validate_one(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broke.empty()) {
    std::fprintf(stderr, "fuzz_validate: %s\n", broke.c_str());
    std::abort();
  }
  return 0;
}
