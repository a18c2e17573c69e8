#!/usr/bin/env bash
# scripts/soak.sh [TOKENS] [BUILD_DIR] [BACKEND]: build amk-soak and decode TOKENS (default 10000)
# tokens of the bundled tiny Llama in one Session on BACKEND (cpu, cuda, hip or auto; default cpu,
# or $AMK_SOAK_BACKEND), sampling VmRSS every 1000 tokens (AMK_SOAK_EVERY) and, on a GPU backend,
# the device memory in use (cudaMemGetInfo / hipMemGetInfo: total - free). The program's KV cache
# holds 256 positions, so the decode is back-to-back 256-token sequences with Session::reset()
# between them (docs/RELIABILITY.md). Exit 0 when memory stays flat (VmRSS growth <= 1 MiB and device
# memory growth <= AMK_SOAK_DEVICE_GROWTH_MIB, default 0, after the first sample), 5 when it grows,
# 4 when the backend is not available (not built, no device), 1 on any decode error.
set -euo pipefail
cd "$(dirname "$0")/.."

tokens=${1:-10000}
build_dir=${2:-build}
backend=${3:-${AMK_SOAK_BACKEND:-cpu}}
if [ ! -f "$build_dir/CMakeCache.txt" ]; then ./scripts/setup.sh "$build_dir"; fi
cmake --build "$build_dir" -j "${AMK_JOBS:-2}" --target amk-soak
"$build_dir/tools/amk-soak" examples/tiny_llama/program.json --weights tests/fixtures/tiny_llama/model.safetensors \
  --backend "$backend" --tokens "$tokens" --sample-every "${AMK_SOAK_EVERY:-1000}" --threads "${AMK_SOAK_THREADS:-0}" \
  --max-device-growth-mib "${AMK_SOAK_DEVICE_GROWTH_MIB:-0}"
