# cmake/AmkOptions.cmake: build options, warnings, sanitizers and GPU toolchain detection.
include(CheckLanguage)

set(AMK_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc exists), ON, OFF")
set(AMK_HIP AUTO CACHE STRING "Build the HIP backend: AUTO (when hipcc exists), ON, OFF")
set_property(CACHE AMK_CUDA PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE AMK_HIP PROPERTY STRINGS AUTO ON OFF)
set(AMK_CUDA_ARCHITECTURES "75" CACHE STRING "CUDA architectures (CI: one; the device script: 90a)")
set(AMK_BLOCK_THREADS "" CACHE STRING "Threads per persistent-kernel block, for measurements (empty: 512)")
if(NOT AMK_BLOCK_THREADS STREQUAL "")
  # 64-thread steps (whole CDNA wavefronts); at least 320 so that a streamed chunk's 256 rows each
  # get an owner thread beside the loader warp (instructions/gemv_stream.cuh).
  if(NOT AMK_BLOCK_THREADS MATCHES "^(320|384|448|512|576|640|704|768|832|896|960|1024)$")
    message(FATAL_ERROR "AMK_BLOCK_THREADS must be a multiple of 64 from 320 to 1024 (got '${AMK_BLOCK_THREADS}')")
  endif()
  add_compile_definitions(AMK_BLOCK_THREADS=${AMK_BLOCK_THREADS})
endif()
option(AMK_BUILD_TESTS "Build the Catch2 test suite" ON)
option(AMK_WERROR "Treat warnings in project code as errors" OFF)
option(AMK_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(AMK_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only; adds ASan+UBSan)" OFF)

foreach(opt AMK_CUDA AMK_HIP)
  if(NOT ${opt} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${opt} must be AUTO, ON or OFF (got '${${opt}}')")
  endif()
endforeach()

# Warnings for project targets only (third-party headers are included as system headers).
add_library(amk_warnings INTERFACE)
target_compile_options(amk_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
  # -Wshadow=local is GCC's spelling; clang (the AMK_FUZZ build) rejects it.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${AMK_WERROR}>>:-Werror>)

# Warnings for the project's CUDA sources (the kernels, the cuBLAS baseline, the probes), as
# compile options: `target_compile_options(t PRIVATE ${AMK_CUDA_WARNINGS})`. A list, not an
# interface library, so the exported static libraries name no extra target.
set(AMK_CUDA_WARNINGS
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall -Xcompiler=-Wextra>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${AMK_WERROR}>>:-Werror=all-warnings>)

# AMK_FUZZ: every project library gets libFuzzer coverage instrumentation (fuzzer-no-link) and the
# sanitizers, so a finding in ir/, loader/ or schedule/ is reported where it happens; the fuzz
# binaries themselves link -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
if(AMK_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AMK_FUZZ=ON needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
elseif(AMK_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# CUDA: enabled when asked for, or found under AUTO.
set(AMK_HAVE_CUDA OFF)
if(NOT AMK_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${AMK_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(AMK_HAVE_CUDA ON)
  elseif(AMK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "AMK_CUDA=ON but no CUDA compiler was found: install the CUDA toolkit or set CMAKE_CUDA_COMPILER")
  endif()
endif()

# HIP: enabled when asked for, or found under AUTO (docs/HIP.md). CMake's HIP language is not
# used: CMake 3.25 wants ROCm's layout (<root>/lib/cmake/hip-lang) and a clang it can identify,
# which Debian's hipcc 5.2 packaging does not provide; vm/hip/CMakeLists.txt runs hipcc itself on
# the shared vm/cuda sources. CUDA and HIP may both be on: one binary then holds both VMs.
set(AMK_HIP_ARCHITECTURES "gfx90a" CACHE STRING
    "AMD GPU architectures for the HIP backend, ;-separated (wave64 CDNA only; CI: gfx90a)")
set(AMK_HAVE_HIP OFF)
if(NOT AMK_HIP STREQUAL "OFF")
  find_program(AMK_HIPCC NAMES hipcc HINTS /opt/rocm/bin DOC "hipcc that compiles the HIP VM")
  find_path(AMK_HIP_INCLUDE_DIR hip/hip_runtime.h HINTS /opt/rocm/include)
  find_library(AMK_HIP_RUNTIME amdhip64 HINTS /opt/rocm/lib DOC "the HIP runtime (libamdhip64)")
  if(AMK_HIPCC AND AMK_HIP_INCLUDE_DIR AND AMK_HIP_RUNTIME)
    set(AMK_HAVE_HIP ON)
  elseif(AMK_HIP STREQUAL "ON")
    message(FATAL_ERROR "AMK_HIP=ON but hipcc, hip/hip_runtime.h or libamdhip64 was not found "
                        "(hipcc: ${AMK_HIPCC}): on Debian 12 apt-get install hipcc, or set AMK_HIPCC")
  endif()
endif()

function(amk_print_summary)
  message(STATUS "")
  message(STATUS "amk ${PROJECT_VERSION} configuration")
  message(STATUS "  build type      : ${CMAKE_BUILD_TYPE}")
  message(STATUS "  C++ compiler    : ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  if(AMK_HAVE_CUDA)
    message(STATUS "  CUDA backend    : ON (${CMAKE_CUDA_COMPILER_VERSION}, arch ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "  CUDA backend    : OFF (AMK_CUDA=${AMK_CUDA})")
  endif()
  if(AMK_HAVE_HIP)
    message(STATUS "  HIP backend     : ON (${AMK_HIPCC}, arch ${AMK_HIP_ARCHITECTURES})")
  else()
    message(STATUS "  HIP backend     : OFF (AMK_HIP=${AMK_HIP})")
  endif()
  message(STATUS "  tests (Catch2)  : ${AMK_BUILD_TESTS}")
  message(STATUS "  sanitizers      : ${AMK_SANITIZE}")
  message(STATUS "  fuzz targets    : ${AMK_FUZZ}")
  message(STATUS "  warnings=errors : ${AMK_WERROR}")
  message(STATUS "")
endfunction()
