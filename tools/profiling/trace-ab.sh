#!/usr/bin/env bash
# tools/profiling/trace-ab.sh SETTING... : one traced decode per setting and model on ONE build, each
# summarised by stage_runs.py (a task's run per stage kind), chunk_timeline.py (its chunks: HBM
# waits against arithmetic) and trace_stages.py (the stage spans of the middle layers). A setting
# is a quoted list of amk-bench decode flags ("-" = none), e.g. `trace-ab.sh - --mlp-fold`: where
# the fold's time goes against the stages it replaces (docs/FOLD.md). The binary is
# $AMK_DEVICE_BUILD/tools/amk-bench (default build-device); logs and gzipped traces go to $OUT
# (else build-device/logs). env: AMK_TRACE_MODELS (default "llama-3.2-1b llama-3-8b"), AMK_TRACE_CTX (128).
# shellcheck source=tools/profiling/ab_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/ab_env.sh"
[ $# -ge 1 ] || { echo "usage: $0 SETTING... (amk-bench decode flags, or - for none)" >&2; exit 2; }
require_bench
P="$ROOT/tools/profiling"
i=0
for setting in "$@"; do
  i=$((i + 1))
  flags=""
  [ "$setting" != "-" ] && flags="$setting"
  for m in ${AMK_TRACE_MODELS:-llama-3.2-1b llama-3-8b}; do
    tag="$m-s$i"
    tr="$LOGS/trace-$tag.json"
    # shellcheck disable=SC2086  # the setting is a word list
    timeout 300 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$m.json" --ctx "${AMK_TRACE_CTX:-128}" \
      --tokens 20 --profile --trace "$tr" $flags >"$LOGS/profile-$tag.txt" 2>&1 || {
      echo "== $m [$setting]: amk-bench failed: $(tail -1 "$LOGS/profile-$tag.txt")"
      continue
    }
    echo "== $m [$setting]: $(grep -A1 'amk ms/token' "$LOGS/profile-$tag.txt" | tail -1)"
    python3 "$P/stage_runs.py" "$tr"
    python3 "$P/chunk_timeline.py" "$tr"
    python3 "$P/trace_stages.py" "$tr" 40 60
    gzip -f "$tr"
  done
done
