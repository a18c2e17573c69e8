#!/usr/bin/env bash
# tools/device-quick.sh: the short loop for a speed change on the GPU machine, in one call: build
# (sm_90a, Release, -Werror), the [gpu] tests, the stream probe, the Llama-1B and Llama-3-8B decode
# benchmarks (default preset, ctx 128), and the per-stage table of a traced 1B token. No
# sanitizers or soak: tools/device-check.sh is the full check before a commit is called done.
# Logs go to $OUT (else build-device/logs); a short table is printed last.
#
# usage: tools/device-quick.sh            env: AMK_SKIP_8B=1, AMK_SKIP_TESTS=1, AMK_SKIP_PROBE=1,
#   AMK_DEVICE_JOBS (16), AMK_CTX (the 1B runs' --ctx list, default 128; "128,8192" lowers for
#   max_seq 8192 and prints both contexts and their ratio), AMK_TRACE_CTX (the traced 1B run's ctx, 128),
#   AMK_AB_ENV="VAR=value ..." and / or AMK_AB_ARGS="--flag value ..." (the benchmarks once more
#   under those settings or amk-bench decode flags, same call: an A/B), AMK_TUNE=1 (then `amk-bench
#   tune`: the 1B over the built-in space at AMK_CTX, the 8B over tools/profiling/tune-space-8b.json;
#   the best schedules land in $OUT as tuned-1b.json / tuned-8b.json), AMK_SKIP_TRACE=1
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${AMK_DEVICE_BUILD:-$ROOT/build-device}"
LOGS="${OUT:-$BUILD/logs}"
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"
declare -A R

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON -DAMK_CUDA_ARCHITECTURES=90a -DAMK_WERROR=ON \
  -DCMAKE_CUDA_FLAGS="-Xptxas=-v -lineinfo" >"$LOGS/configure.log" 2>&1 &&
  cmake --build "$BUILD" -j"${AMK_DEVICE_JOBS:-16}" --target amk-bench amk-stream-probe amk_gpu_tests \
    >"$LOGS/build.log" 2>&1
R[build]="rc=$?"
grep -E "error" "$LOGS/build.log" | head -20

if [ "${AMK_SKIP_TESTS:-0}" != 1 ]; then
  "$BUILD/tests/gpu/amk_gpu_tests" "[gpu]" >"$LOGS/gpu-tests.log" 2>&1
  R[tests]="rc=$? $(grep -E '^test cases:|^All tests passed' "$LOGS/gpu-tests.log" | tail -1)"
  grep -B4 -A8 -E "FAILED" "$LOGS/gpu-tests.log" | head -60
fi

if [ "${AMK_SKIP_PROBE:-0}" != 1 ]; then
  timeout 120 "$BUILD/tools/amk-stream-probe" >"$LOGS/stream-probe.txt" 2>&1
  R[probe]="rc=$?"
fi
CTX1B="${AMK_CTX:-128}"

bench() {  # name, model config, ctx list[, env settings[, amk-bench decode flags]]
  # shellcheck disable=SC2086  # the settings and flags are word lists
  env ${4:-} timeout 300 "$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$2" --ctx "$3" \
    --tokens 30 --json ${5:-} >"$LOGS/bench-$1.json" 2>"$LOGS/bench-$1.err"
  R[$1]="$(python3 -c "
import json; j = json.load(open('$LOGS/bench-$1.json')); rs = j['results']
print('; '.join(f\"ctx {r['ctx']}: {r['amk_ms_per_token']:.3f} ms ({r['amk_pct_of_copy_bw']:.1f}% of {j['copy_bandwidth_gbs']:.0f} GB/s), cuBLAS {r['baseline_ms_per_token']:.3f}, {r['speedup_vs_baseline']:.2f}x\" for r in rs)
      + (f\"; ratio {rs[-1]['amk_ms_per_token'] / rs[0]['amk_ms_per_token']:.3f}x\" if len(rs) > 1 else ''))
" 2>/dev/null || echo "FAILED: $(tail -1 "$LOGS/bench-$1.err")")"
}
bench 1b llama-3.2-1b.json "$CTX1B"
[ "${AMK_SKIP_8B:-0}" != 1 ] && bench 8b llama-3-8b.json 128
if [ -n "${AMK_AB_ENV:-}${AMK_AB_ARGS:-}" ]; then
  bench 1b-ab llama-3.2-1b.json "$CTX1B" "${AMK_AB_ENV:-}" "${AMK_AB_ARGS:-}"
  [ "${AMK_SKIP_8B:-0}" != 1 ] && bench 8b-ab llama-3-8b.json 128 "${AMK_AB_ENV:-}" "${AMK_AB_ARGS:-}"
  bench 1b-again llama-3.2-1b.json "$CTX1B"  # drift: the default once more after the A/B
fi

tune() {  # name, model config, ctx list[, tune flags]
  # shellcheck disable=SC2086  # the flags are a word list
  timeout 420 "$BUILD/tools/amk-bench" tune --model "$ROOT/tests/fixtures/configs/$2" --ctx "$3" --json \
    --out "$LOGS/tuned-$1.json" ${4:-} >"$LOGS/tune-$1.json" 2>"$LOGS/tune-$1.err"
  R[tune-$1]="$(python3 -c "
import json; j = json.load(open('$LOGS/tune-$1.json')); c = j['comparison']
print(f\"{len(j['candidates'])} candidates, best: {j['best']['label']}; preset {c['start_ms_per_token']} vs #{c['searched_best']} {c['searched_best_ms_per_token']} ms: {c['speedup']:.3f}x, confirmed {c['confirmed']}\")
" 2>/dev/null || echo "FAILED: $(tail -1 "$LOGS/tune-$1.err")")"
}
if [ "${AMK_TUNE:-0}" = 1 ]; then
  tune 1b llama-3.2-1b.json "$CTX1B"
  [ "${AMK_SKIP_8B:-0}" != 1 ] && tune 8b llama-3-8b.json 128 "--space $ROOT/tools/profiling/tune-space-8b.json"
fi

[ "${AMK_SKIP_TRACE:-0}" != 1 ] && {
# One ctx (AMK_TRACE_CTX, default 128): a trace of several launches would mix their stages.
"$BUILD/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/llama-3.2-1b.json" --ctx "${AMK_TRACE_CTX:-128}" --tokens 20 --profile \
  --trace "$LOGS/trace-1b.json" >"$LOGS/profile-1b.txt" 2>&1
python3 "$ROOT/tools/profiling/trace_stages.py" "$LOGS/trace-1b.json" 100 200 >"$LOGS/stages-1b.txt" 2>&1
python3 "$ROOT/tools/profiling/chunk_timeline.py" "$LOGS/trace-1b.json" >"$LOGS/chunks-1b.txt" 2>&1
gzip -f "$LOGS/trace-1b.json"  # ~10 MB: tar it with the logs, or delete it

head -40 "$LOGS/stages-1b.txt"
cat "$LOGS/chunks-1b.txt"
}
[ -f "$LOGS/stream-probe.txt" ] && cat "$LOGS/stream-probe.txt"
echo "================ device-quick ================"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
[ -n "${AMK_AB_ENV:-}${AMK_AB_ARGS:-}" ] && echo "ab: ${AMK_AB_ENV:-} ${AMK_AB_ARGS:-}"
for k in build tests probe 1b 8b 1b-ab 8b-ab 1b-again tune-1b tune-8b; do [ -n "${R[$k]+x}" ] && printf '%-8s %s\n' "$k" "${R[$k]}"; done
