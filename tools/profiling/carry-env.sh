#!/usr/bin/env bash
# tools/profiling/carry-env.sh: sourced first in a device call that carries
# [".deps/root/usr/lib/x86_64-linux-gnu", "build-pack/build-carry.tar.gz"] (binaries built here by
# tools/profiling/prebuild-ab.sh; the 64 MiB carry limit counts the tracked tree too, so carry
# only the libraries of .deps/root, not its headers and docs): puts the carried Debian
# libraries on LD_LIBRARY_PATH, unpacks build-pack/build-carry.tar.gz, links each variant's
# recorded source path (build-carry/NAME/SOURCE_DIR: its [gpu] tests read fixtures from there) to
# this checkout, prints the device, and exports P (the unpacked build-carry). Then e.g.
#   source tools/profiling/carry-env.sh; $P/base/tests/gpu/amk_gpu_tests "[gpu]"
#   AMK_AB_PREBUILT=$P AMK_SKIP_TESTS=1 OUT=/tmp/ab bash tools/profiling/build-ab.sh base= x=
#   AMK_DEVICE_BUILD=$P/base OUT=/tmp/e bash tools/profiling/env-ab.sh - SETTING
ROOT_CARRY="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export LD_LIBRARY_PATH="$ROOT_CARRY/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
tar xzf "$ROOT_CARRY/build-pack/build-carry.tar.gz" -C "$ROOT_CARRY/build-pack" || return 2 2>/dev/null || exit 2
export P="$ROOT_CARRY/build-pack/build-carry"
for d in "$P"/*/; do
  [ -f "$d/SOURCE_DIR" ] || continue
  src="$(cat "$d/SOURCE_DIR")"
  [ -e "$src/tests/fixtures" ] || { mkdir -p "$(dirname "$src")" && ln -sfn "$ROOT_CARRY" "$src"; }
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
