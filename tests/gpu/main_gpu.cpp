// tests/gpu/main_gpu.cpp: the Catch2 runner of amk_gpu_tests. It names the device first; with no
// device every [gpu] test FAILS (gputest::require_gpu), so a GPU-less run can never look green.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "vm/cuda/cuda_executor.h"

int main(int argc, char* argv[]) {
  std::printf("amk_gpu_tests: device: %s\n", amk::vm::cuda_device_name().c_str());
  return Catch::Session().run(argc, argv);
}
