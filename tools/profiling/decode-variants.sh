#!/usr/bin/env bash
# tools/profiling/decode-variants.sh MODEL CTX VARIANT... : one amk-bench decode per variant on ONE
# build, alternated over the variants AMK_AB_ROUNDS times (default 1), for schedule and knob
# comparisons that env-ab.sh cannot express (its settings share one set of decode flags). A
# VARIANT is "name|env words|decode flags", e.g. "h2p8||--heads-per-task 2 --kv-partitions 8" or
# "generic|AMK_ROPE_PROLOGUE_GENERIC=1|--kv-partitions 8"; MODEL is a file name under
# tests/fixtures/configs, CTX a --ctx list (with two contexts the table shows last / first).
# Needs amk-bench in $AMK_DEVICE_BUILD (default build-device). Logs go to $OUT (else
# build-device/logs); the table is printed last.
#   e.g. tools/profiling/decode-variants.sh llama-3.2-1b.json 128,8192 "base||" "h2p8||--heads-per-task 2 --kv-partitions 8"
# shellcheck source=tools/profiling/ab_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/ab_env.sh"
[ $# -ge 3 ] || { echo "usage: $0 MODEL CTX 'name|env words|decode flags'..." >&2; exit 2; }
require_bench
model="$1" ctx="$2"
shift 2

names=()
declare -A ENVS FLAGS R
for v in "$@"; do
  IFS='|' read -r n e f <<<"$v"
  [[ "$n" =~ ^[a-z0-9_-]+$ ]] || { echo "bad variant name '$n' (want [a-z0-9_-]+)" >&2; exit 2; }
  names+=("$n")
  ENVS[$n]="$e"
  FLAGS[$n]="$f"
done

for round in $(seq 1 "${AMK_AB_ROUNDS:-1}"); do
  for n in "${names[@]}"; do
    log="$LOGS/variant-$n-r$round"
    # shellcheck disable=SC2086  # env words and flags are word lists
    env ${ENVS[$n]} timeout 300 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$model" \
      --ctx "$ctx" --tokens "${AMK_AB_TOKENS:-30}" --json ${FLAGS[$n]} >"$log.json" 2>"$log.err"
    R[$n]+="$(python3 -c "
import json; rs = json.load(open('$log.json'))['results']
s = ' / '.join(f\"{r['amk_ms_per_token']:.3f}\" for r in rs)
print(s + (f\" ({rs[-1]['amk_ms_per_token'] / rs[0]['amk_ms_per_token']:.3f}x)\" if len(rs) > 1 else ''), end='')
" 2>/dev/null || echo -n "FAILED($(tail -1 "$log.err"))")  "
  done
done

echo "================ decode-variants: $model, ctx $ctx (ms per token per round) ================"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
for n in "${names[@]}"; do printf '%-10s %-60s %s\n' "$n" "[${ENVS[$n]}|${FLAGS[$n]}]" "${R[$n]}"; done
