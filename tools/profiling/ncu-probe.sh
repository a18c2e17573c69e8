#!/usr/bin/env bash
# tools/profiling/ncu-probe.sh: what one row of amk-stream-probe costs in instructions and stalls,
# on one SM (the row's second one-SM launch: the first is a warm-up). For the chunk consumer
# (instructions/gemv_stream.cuh) outside the megakernel: instructions issued per chunk, issue
# efficiency, the warp stall mix, and the hottest SASS instructions with what precedes them.
#
# usage: tools/profiling/ncu-probe.sh PROBE_BINARY ROW [ROW...]   (rows: amk-stream-probe's table, from 0)
# env:   OUT (where the reports go; default ./ncu-probe-out), NCU_TOP (hot instructions shown, 30)
set -u -o pipefail
PROBE="$(realpath "$1")"
shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${OUT:-ncu-probe-out}"
mkdir -p "$DEST"
export PATH="/usr/local/cuda/bin:$PATH"

for row in "$@"; do
  echo "================ probe row $row ================"
  # --kib 4096: 64 chunks of 64 KiB on the SM, enough to make the per-chunk figures steady.
  ncu --clock-control none -k regex:ring_probe --launch-skip 1 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --section SpeedOfLight --import-source no -f -o "$DEST/row$row" "$PROBE" --only "$row" --kib 4096 \
    >"$DEST/row$row-run.log" 2>&1
  echo "ncu exit $? ($(grep -E '^ring' "$DEST/row$row-run.log" | head -1))"
  ncu -i "$DEST/row$row.ncu-rep" --page details >"$DEST/row$row-details.txt" 2>&1
  grep -E "Executed Instructions |Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler|Warp Cycles Per Issued Instruction|Duration|Elapsed Cycles|Registers Per Thread" \
    "$DEST/row$row-details.txt" | sed 's/^ *//' | sort -u
  ncu -i "$DEST/row$row.ncu-rep" --page source --csv --print-source sass >"$DEST/row$row-sass.csv" 2>&1
  python3 "$HERE/ncu_top.py" "$DEST/row$row-sass.csv" "${NCU_TOP:-30}" >"$DEST/row$row-top.txt" 2>&1
  head -c 12000 "$DEST/row$row-top.txt"
  gzip -f "$DEST/row$row-sass.csv"
  rm -f "$DEST/row$row.ncu-rep"
done
