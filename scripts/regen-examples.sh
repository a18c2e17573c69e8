#!/usr/bin/env bash
# scripts/regen-examples.sh: regenerate the bundled example programs with amk-compile.
# tests/schedule/models_test.cpp checks that examples/tiny_llama/program.json is byte-identical to
# what this command writes, so run this (and review the diff) after an intended lowering change.
# Usage: scripts/regen-examples.sh [BUILD_DIR]   (default: build; amk-compile must be built there)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
compile="$build/tools/amk-compile"
if [[ ! -x "$compile" ]]; then
  echo "regen-examples: $compile not found; build it first: cmake --build $build --target amk-compile" >&2
  exit 2
fi
cd "$root"
# Relative paths keep the output independent of where the tree is checked out.
"$compile" tests/fixtures/tiny_llama/config.json --target cpu --max-seq 256 --dtype f32 --weight-dtype bf16 \
  -o examples/tiny_llama/program.json
