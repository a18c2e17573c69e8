#!/usr/bin/env bash
# tools/profiling/ring-sweep.sh [SETTINGS...]: the Llama-1B decode under each setting (a quoted list
# of VAR=value knobs, docs/STATUS.md "Tuning knobs"; "-" = the defaults), each one traced launch
# plus the timed tokens, and the weight stream's chunk timeline per stage kind
# (tools/profiling/chunk_timeline.py). Needs a build of amk-bench in $AMK_DEVICE_BUILD
# (default build-device: run tools/device-quick.sh first). Logs go to $OUT (else build-device/logs).
#   e.g. tools/profiling/ring-sweep.sh - "AMK_RING_SLOTS=3" "AMK_RING_SLOTS=4 AMK_RING_SLOT_KIB=32"
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${AMK_DEVICE_BUILD:-$ROOT/build-device}"
LOGS="${OUT:-$BUILD/logs}"
MODEL="${AMK_SWEEP_MODEL:-llama-3.2-1b.json}"
mkdir -p "$LOGS"
i=0
for setting in "$@"; do
  i=$((i + 1))
  [ "$setting" = - ] && setting=""
  env $setting timeout 300 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$MODEL" --tokens 30 \
    --profile --trace "$LOGS/sweep-$i.json" --json >"$LOGS/sweep-$i.out" 2>"$LOGS/sweep-$i.err"
  echo "=== [$i] ${setting:-defaults}: $(python3 -c "
import json; r = json.load(open('$LOGS/sweep-$i.out'))['results'][0]
print(f\"{r['amk_ms_per_token']:.3f} ms/token, {r['amk_pct_of_copy_bw']:.1f}% of copy bandwidth\")" 2>/dev/null ||
    echo "FAILED: $(tail -1 "$LOGS/sweep-$i.err")")"
  python3 "$ROOT/tools/profiling/chunk_timeline.py" "$LOGS/sweep-$i.json" 2>&1
  rm -f "$LOGS/sweep-$i.json"
done
