#!/usr/bin/env bash
# scripts/soak.sh [TOKENS] [BUILD_DIR]: build amk-soak and decode TOKENS (default 10000) tokens of the
# bundled tiny Llama on the CPU VM in one Session, sampling VmRSS every 1000 tokens. The program's
# KV cache holds 256 positions, so the decode is back-to-back 256-token sequences with Session::reset()
# between them (docs/RELIABILITY.md). Exit 0 when resident memory stays flat (growth <= 1 MiB after
# the first sample), 5 when it grows, 1 on any decode error.
set -euo pipefail
cd "$(dirname "$0")/.."

tokens=${1:-10000}
build_dir=${2:-build}
if [ ! -f "$build_dir/CMakeCache.txt" ]; then ./scripts/setup.sh "$build_dir"; fi
cmake --build "$build_dir" -j "${AMK_JOBS:-2}" --target amk-soak
"$build_dir/tools/amk-soak" examples/tiny_llama/program.json --weights tests/fixtures/tiny_llama/model.safetensors \
  --tokens "$tokens" --sample-every 1000 --threads "${AMK_SOAK_THREADS:-0}"
