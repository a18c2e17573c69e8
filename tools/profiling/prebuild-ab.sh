#!/usr/bin/env bash
# tools/profiling/prebuild-ab.sh NAME=CUDA_FLAGS... : build-ab.sh's variants built here, without a
# GPU, so that the device call only runs them (a cold sm_90a build costs ~150 s of device time per
# variant; here it costs wall time only). Each variant is this tree with extra nvcc flags, e.g.
# "base=" or "inl=-DAMK_LOADER_INLINE"; its amk-bench and amk_gpu_tests go to build-carry/NAME/
# (tools/, tests/gpu/: a build directory's layout) with ptxas's report of the kernel. On the device:
#   carry [".deps/root", "build-pack"]; AMK_AB_PREBUILT=build-pack/build-carry.tar.gz bash tools/profiling/build-ab.sh NAME=...
#   (or `source tools/profiling/carry-env.sh` first: libraries, unpacked variants in $P, fixtures linked)
# (the variants gathered so far, packed: a call carries 64 MiB at most).
# Only the CUDA flags differ between the variants: they share one build directory (build-prebuilt),
# so the host code compiles once and each variant recompiles the CUDA translation units alone.
# The binaries hold this tree's absolute path (the [gpu] tests' fixtures: AMK_SOURCE_DIR), recorded
# in build-carry/NAME/SOURCE_DIR; build-ab.sh links that path to the device's tree when it is
# missing. AMK_CARRY=DIR puts the variants in DIR instead (e.g. the main checkout's build-carry, the
# only tree the device gets, for a variant built in a git worktree). Variants built earlier stay
# in build-carry and in the pack (a base from an older commit, say): `rm -r build-carry/NAME`
# drops one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build-prebuilt"
CARRY="${AMK_CARRY:-$ROOT/build-carry}"  # another tree's build-carry gathers variants of two trees
export PATH="/usr/local/cuda/bin:$PATH"
[ $# -ge 1 ] || { echo "usage: $0 NAME=CUDA_FLAGS..." >&2; exit 2; }
mkdir -p "$CARRY"
for v in "$@"; do
  n="${v%%=*}"
  [[ "$n" =~ ^[a-z0-9_-]+$ ]] || { echo "bad variant name '$n' (want [a-z0-9_-]+)" >&2; exit 2; }
  flags="-Xptxas=-v -lineinfo ${v#*=}"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON -DAMK_CUDA_ARCHITECTURES=90a -DAMK_HIP=OFF \
    -DAMK_WERROR=ON -DCMAKE_CUDA_FLAGS="$flags" >"$CARRY/configure-$n.log" 2>&1
  # ptxas's report is only printed when the kernel's object is rebuilt: force it.
  find "$BUILD" -name 'persistent_kernel.cu.o' -delete
  start=$(date +%s)
  if ! cmake --build "$BUILD" -j"$(nproc)" --target amk-bench amk_gpu_tests >"$CARRY/build-$n.log" 2>&1; then
    grep -E "error" "$CARRY/build-$n.log" | head -20
    echo "variant $n: build failed (log: $CARRY/build-$n.log)" >&2
    exit 1
  fi
  rm -rf "${CARRY:?}/$n"
  mkdir -p "$CARRY/$n/tools" "$CARRY/$n/tests/gpu"  # a build directory's layout: AMK_DEVICE_BUILD=build-carry/NAME
  cp "$BUILD/tools/amk-bench" "$CARRY/$n/tools/"       # serves env-ab.sh and decode-variants.sh too
  cp "$BUILD/tests/gpu/amk_gpu_tests" "$CARRY/$n/tests/gpu/"
  echo "$flags" >"$CARRY/$n/FLAGS"
  echo "$ROOT" >"$CARRY/$n/SOURCE_DIR"
  grep -A4 'Compiling entry function.*amk_persistent_kernel' "$CARRY/build-$n.log" | sed 's/^ptxas info *: //' >"$CARRY/$n/ptxas.txt"
  echo "$n [$flags] built in $(( $(date +%s) - start )) s: $(grep -oE '[0-9]+ bytes spill (stores|loads)' "$CARRY/$n/ptxas.txt" | tr '\n' ' ')"
done
# Packed: a variant's two binaries are ~27 MB, ~7.5 MB gzipped, and a call carries 64 MiB at most.
PACK="$(dirname "$CARRY")/build-pack/$(basename "$CARRY").tar.gz"
mkdir -p "$(dirname "$PACK")"
tar czf "$PACK" --exclude="*.log" -C "$(dirname "$CARRY")" "$(basename "$CARRY")"
echo "variants: $(cd "$CARRY" && ls -d -- */ | tr -d / | tr '\n' ' ')-> $PACK ($(du -h "$PACK" | cut -f1))"
