#!/usr/bin/env bash
# tools/profiling/env-ab.sh SETTING... : a same-call A/B of runtime knobs on ONE build: the
# Llama-1B (ctx 128) and Llama-3-8B decode benchmarks under each setting (a quoted list of
# VAR=value knobs and amk-bench decode --flags, e.g. "--mlp-fold"; "-" = the defaults), alternated over the settings AMK_AB_ROUNDS times (default
# 2) so a drift of the machine shows as a drift, not as a difference. One binary means no
# register-allocation noise between the variants (docs/PERFORMANCE.md rows 77-78). Needs amk-bench
# built in $AMK_DEVICE_BUILD (default build-device: tools/device-quick.sh builds it). Logs go to
# $OUT (else build-device/logs); a table is printed last.
#   e.g. tools/profiling/env-ab.sh - AMK_ROPE_PROLOGUE_GENERIC=1
# env: AMK_SKIP_8B=1, AMK_AB_ROUNDS (2), AMK_AB_CTX (the 1B --ctx list, 128), AMK_AB_TOKENS (30),
#   AMK_AB_ARGS (more amk-bench decode flags for every run, e.g. "--baseline none" for an emulation
#   whose results are wrong on purpose: docs/PERFORMANCE.md row 97)
# shellcheck source=tools/profiling/ab_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/ab_env.sh"
[ $# -ge 1 ] || { echo "usage: $0 SETTING... (\"VAR=value ...\" or - for the defaults)" >&2; exit 2; }
require_bench

declare -A R
run() {  # round, setting index, setting, name, model config, ctx list
  local env_words="" arg_words="" w log="$LOGS/envab-$4-$2-r$1"
  # A setting's VAR=value words go to the environment, its --flag words to amk-bench decode.
  for w in $3; do
    case "$w" in
      -) ;;
      --*) arg_words+=" $w" ;;
      *) env_words+=" $w" ;;
    esac
  done
  # shellcheck disable=SC2086  # the setting is a word list
  env $env_words timeout 300 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$5" --ctx "$6" \
    --tokens "${AMK_AB_TOKENS:-30}" --json ${AMK_AB_ARGS:-} $arg_words >"$log.json" 2>"$log.err"
  R[$4,$2]+="$(python3 -c "
import json; rs = json.load(open('$log.json'))['results']
print(' / '.join(f\"{r['amk_ms_per_token']:.3f}\" for r in rs), end='')" 2>/dev/null || echo "FAILED($(tail -1 "$log.err"))")  "
}

device="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
for round in $(seq 1 "${AMK_AB_ROUNDS:-2}"); do
  i=0
  for setting in "$@"; do
    i=$((i + 1))
    run "$round" "$i" "$setting" 1b llama-3.2-1b.json "${AMK_AB_CTX:-128}"
    [ "${AMK_SKIP_8B:-0}" != 1 ] && run "$round" "$i" "$setting" 8b llama-3-8b.json 128
  done
done

echo "=== env-ab on ${device:-the device} (ms per token, one column per round; 1B ctx ${AMK_AB_CTX:-128}, 8B ctx 128)${AMK_AB_ARGS:+, flags: $AMK_AB_ARGS}"
i=0
for setting in "$@"; do
  i=$((i + 1))
  printf '%-40s 1B %s  8B %s\n' "$setting" "${R[1b,$i]:-}" "${R[8b,$i]:--}"
done
