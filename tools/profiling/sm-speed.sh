#!/usr/bin/env bash
# tools/profiling/sm-speed.sh: is an SM's share of HBM bandwidth a property of the SM, and does a
# worker keep its SM from launch to launch? (docs/PERFORMANCE.md row 210: on one H100, 24 of the
# 132 SMs streamed ~9% faster in the megakernel's fold tasks and ~23% faster in amk-stream-probe.)
# (1) amk-stream-probe --per-sm (every SM streams the same bytes; each SM's time by %smid over 12
#     launches, and whether block b lands on the same SM each time), at a fold task's 2624 KiB;
# (2) per model, two processes of `amk-bench decode --ctx 128,128 --profile --trace` (two traced
#     launches each, with each worker's SM: LaunchTrace::worker_sm), read by worker_speed.py: the
#     fast workers per launch, and the correlations by worker and by SM across the four launches.
# Needs amk-bench in $AMK_DEVICE_BUILD (default build-device) and the probe at $AMK_STREAM_PROBE
# (default $AMK_DEVICE_BUILD/tools/amk-stream-probe). Logs to $OUT; the traces are gzipped there.
# env: AMK_SPEED_MODELS (default "llama-3-8b llama-3.2-1b").
# shellcheck source=tools/profiling/ab_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/ab_env.sh"
require_bench
PROBE="${AMK_STREAM_PROBE:-$BUILD/tools/amk-stream-probe}"
if [ -x "$PROBE" ]; then
  timeout 60 "$PROBE" --per-sm --kib 2624 >"$LOGS/persm.txt" 2>&1
  echo "== amk-stream-probe --per-sm (rc $?)"; cat "$LOGS/persm.txt"
else
  echo "== no probe at $PROBE: skipped"
fi
for m in ${AMK_SPEED_MODELS:-llama-3-8b llama-3.2-1b}; do
  for i in 1 2; do
    timeout 200 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$m.json" --ctx 128,128 --tokens 5 \
      --profile --baseline none --trace "$LOGS/speed-$m-$i.json" >"$LOGS/speed-$m-$i.txt" 2>&1 ||
      echo "== $m process $i: amk-bench failed: $(tail -1 "$LOGS/speed-$m-$i.txt")"
  done
  echo "== $m: two processes x two traced launches"
  python3 "$ROOT/tools/profiling/worker_speed.py" "$LOGS/speed-$m-1.json" "$LOGS/speed-$m-2.json" --kinds mlp_fold,o_proj,q_proj
  gzip -f "$LOGS/speed-$m-1.json" "$LOGS/speed-$m-2.json"
done
