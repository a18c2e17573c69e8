// tests/tools/progress_test.cpp: the progress bar's line formatting (tools/common/progress.h) and
// that a bar that is not enabled (stderr not a terminal) stays silent.
#include <catch2/catch.hpp>

#include "tools/common/progress.h"

using amk::tools::progress_format;
using amk::tools::ProgressUnit;

TEST_CASE("progress: bar, percentage, counts and time", "[tools]") {
  CHECK(progress_format("decoding", 5, 10, ProgressUnit::Count, 1.24, 10) ==
        "decoding [#####-----]  50%  5/10  1.2 s");
  CHECK(progress_format("decoding", 0, 4, ProgressUnit::Count, 0.0, 4) == "decoding [----]   0%  0/4  0.0 s");
  CHECK(progress_format("decoding", 4, 4, ProgressUnit::Count, 2.0, 4) == "decoding [####] 100%  4/4  2.0 s");
}

TEST_CASE("progress: bytes are shown in MB; a cell fills only when reached", "[tools]") {
  CHECK(progress_format("loading weights", 12'000'000, 24'000'000, ProgressUnit::Bytes, 0.4, 8) ==
        "loading weights [####----]  50%  12.0/24.0 MB  0.4 s");
  CHECK(progress_format("x", 99, 100, ProgressUnit::Count, 0.0, 10) == "x [#########-]  99%  99/100  0.0 s");
}

TEST_CASE("progress: out-of-range input is clamped, never garbled", "[tools]") {
  CHECK(progress_format("x", 15, 10, ProgressUnit::Count, 0.0, 4) == "x [####] 100%  10/10  0.0 s");
  CHECK(progress_format("x", -3, 10, ProgressUnit::Count, -1.0, 4) == "x [----]   0%  0/10  0.0 s");
  CHECK(progress_format("x", 3, 0, ProgressUnit::Count, 0.0, 4) == "x [----]   0%  0/0  0.0 s");
  CHECK(progress_format("x", 1, 2, ProgressUnit::Count, 0.0, 0) == "x [-]  50%  1/2  0.0 s");
}

TEST_CASE("progress: a disabled bar draws nothing", "[tools]") {
  amk::tools::ProgressBar bar("quiet", ProgressUnit::Count, false);
  CHECK_FALSE(bar.enabled());
  bar.update(1, 2);  // would write to stderr if enabled; nothing to observe but no crash
  bar.finish();
}
