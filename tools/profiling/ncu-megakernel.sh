#!/usr/bin/env bash
# tools/profiling/ncu-megakernel.sh: where the persistent kernel's warps stall, per micro-kernel.
# Profiles one launch of amk_persistent_kernel inside `amk-bench decode` with Nsight Compute's
# source counters, disassembles the same binary with line info, and joins the two
# (ncu_by_function.py): stall samples per device function (each NOINLINE micro-kernel is its own
# function) and per source line, with the stall reasons. The raw exports are gzipped into $OUT so
# the join can be redone elsewhere (they are too large uncompressed).
#
# usage: tools/profiling/ncu-megakernel.sh BENCH_BINARY [amk-bench decode args...]
#   e.g. tools/profiling/ncu-megakernel.sh /tmp/b1/tools/amk-bench --model tests/fixtures/configs/llama-3.2-1b.json
# env:   OUT (where the outputs go; default ./ncu-out), NCU_SKIP (launches skipped first, default
#        10: amk-bench decode's 8 correctness-check steps run at positions 0-7 before the timed
#        steps at --ctx, so a smaller skip profiles a check step with a few keys, not the context
#        asked for; docs/PERFORMANCE.md row 107)
set -u -o pipefail
BENCH="$(realpath "$1")"  # absolute: the disassembly step runs in a temporary directory
shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${OUT:-ncu-out}"
SKIP="${NCU_SKIP:-10}"
mkdir -p "$DEST"
export PATH="/usr/local/cuda/bin:$PATH"

# Clock control off: the stall mix should be the one a normal run has, not at locked base clocks.
# The watchdog is raised: ncu replays the profiled launch ~20 times, past amk-bench's 30-s default
# (which made amk-bench exit 3 after a whole report, docs/PERFORMANCE.md row 111).
ncu --clock-control none -k regex:amk_persistent_kernel --launch-skip "$SKIP" --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats \
  --section MemoryWorkloadAnalysis --section InstructionStats --import-source no \
  -f -o "$DEST/prof" "$BENCH" decode --tokens 5 --watchdog-ms 3600000 "$@" >"$DEST/ncu-run.log" 2>&1
echo "ncu exit $? ($(tail -n 2 "$DEST/ncu-run.log" | tr '\n' ' '))"
ncu -i "$DEST/prof.ncu-rep" --page details >"$DEST/details.txt" 2>&1
ncu -i "$DEST/prof.ncu-rep" --page source --csv --print-source sass >"$DEST/sass.csv" 2>&1

# The same code, disassembled with the source line (and inlining chain) of every instruction.
TMP="$(mktemp -d)"
(cd "$TMP" && cuobjdump -xelf all "$BENCH" >"$DEST/cuobjdump.log" 2>&1)
ls "$TMP" >>"$DEST/cuobjdump.log"
: >"$DEST/disasm.txt"
for cubin in "$TMP"/*.cubin; do
  [ -e "$cubin" ] || continue
  # grep -c reads to the end: with -q, nvdisasm would die of SIGPIPE and pipefail fail the test
  if nvdisasm -c "$cubin" 2>/dev/null | grep -c amk_persistent_kernel >/dev/null; then
    nvdisasm -gi -c "$cubin" >>"$DEST/disasm.txt" 2>&1
  fi
done
rm -rf "$TMP"

python3 "$HERE/ncu_by_function.py" "$DEST/sass.csv" "$DEST/disasm.txt" | tee "$DEST/by-function.txt"
gzip -f "$DEST/sass.csv" "$DEST/disasm.txt"
rm -f "$DEST/prof.ncu-rep"
