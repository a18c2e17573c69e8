// tests/tools/json_out_stats_test.cpp: the sample statistics every tool reports through
// (tools/common/json_out.h): percentile's nearest rank and median, the middle sample (the upper
// middle one of an even count), whatever the order the samples came in.
#include <catch2/catch.hpp>

#include "tools/common/json_out.h"

using amk::tools::median;
using amk::tools::percentile;

TEST_CASE("median: the middle sample in sorted order, the upper middle of an even count", "[tools]") {
  CHECK(median({}) == 0.0);
  CHECK(median({7.0}) == 7.0);
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 3.0);  // v[n / 2] of the sorted samples
  CHECK(median({5.0, 5.0, 1.0, 9.0, 9.0, 9.0}) == 9.0);
}

TEST_CASE("percentile: nearest rank between the smallest and the largest sample", "[tools]") {
  const std::vector<double> v = {10.0, 40.0, 20.0, 30.0, 50.0};
  CHECK(percentile(v, 0.0) == 10.0);
  CHECK(percentile(v, 1.0) == 50.0);
  CHECK(percentile(v, 0.9) == 50.0);  // rank 0.9 * 4 + 0.5 = 4.1 -> the 5th
  CHECK(percentile(v, 0.5) == median(v));
  CHECK(percentile({}, 0.5) == 0.0);
}
