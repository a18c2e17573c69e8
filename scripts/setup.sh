#!/usr/bin/env bash
# scripts/setup.sh [BUILD_DIR] [CMAKE_ARGS...]: install the Debian packages amk needs (only the
# missing ones), then configure BUILD_DIR (default: build) with warnings as errors and build it.
# Used by run-main.sh and run-tests.sh. AMK_JOBS sets the build parallelism (default 2).
# CUDA is compiled when nvcc exists (AMK_CUDA=AUTO), for AMK_CUDA_ARCHITECTURES (one arch).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
if (($# > 0)); then shift; fi

# make: cmake's default generator needs it, and a minimal Debian 12 does not ship it.
packages=(cmake make g++ nlohmann-json3-dev libcli11-dev libspdlog-dev catch2)
# hipcc (Debian 12: HIP 5.2, clang 15, libamdhip64) only when the HIP backend is asked for.
for arg in "$@"; do
  if [[ $arg == -DAMK_HIP=ON ]]; then packages+=(hipcc); fi
done
if command -v dpkg >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]} > 0)); then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    echo "setup: installing ${missing[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
else
  echo "setup: dpkg not found; assuming these are installed: ${packages[*]}" >&2
fi

cmake -S . -B "$build_dir" -DAMK_WERROR=ON "$@"
cmake --build "$build_dir" -j "${AMK_JOBS:-2}"
