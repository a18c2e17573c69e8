#!/usr/bin/env bash
# tools/profiling/ab-trace.sh NAME=CMAKE_ARGS... : build-ab.sh's variants (built only, no [gpu]
# tests), then in one call: the token-checked decode benchmarks of AMK_BENCH (default: every
# variant) alternated AMK_ROUNDS times (1B ctx 128 every round, 8B in the first AMK_ROUNDS_8B),
# unchecked ones (--baseline none) of AMK_NOCHECK (variants whose results are wrong on purpose),
# and one traced 1B decode of each variant of AMK_TRACE (default: every variant) summarised by
# chunk_timeline.py, stage_runs.py, trace_stages.py and probe_offsets.py; with AMK_TEST=variant,
# that variant's [gpu] tests (AMK_AB_TEST_FILTER) last. Logs and gzipped traces under $OUT/l; a
# table last. E.g. AMK_TEST=base AMK_BENCH="base x" AMK_ROUNDS=3 tools/profiling/ab-trace.sh \
#   base= "x='-DCMAKE_CUDA_FLAGS=-Xptxas=-v -lineinfo -DAMK_NO_PREBIND'" (docs/PERFORMANCE.md row 117)
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
L="${OUT:-$ROOT/ab-trace-logs}/l"
mkdir -p "$L"
names=()
for v in "$@"; do names+=("${v%%=*}"); done
OUT=$L AMK_SKIP_TESTS=1 AMK_AB_ROUNDS=0 bash "$ROOT/tools/profiling/build-ab.sh" "$@" >"$L/build-ab.txt" 2>&1
# AMK_TEST=variant: its [gpu] tests too (built now, run after the timings)
[ -n "${AMK_TEST:-}" ] && cmake --build "$ROOT/build-ab-$AMK_TEST" -j"${AMK_DEVICE_JOBS:-16}" --target amk_gpu_tests \
  >"$L/build-tests.log" 2>&1
declare -A R
ms() {  # json, err
  python3 -c "
import json; j = json.load(open('$1')); print(' '.join(f\"{r['amk_ms_per_token']:.3f}\" for r in j['results']))" 2>/dev/null ||
    echo "FAILED($(tail -1 "$2" | cut -c1-80))"
}
run() {  # variant tag model-config [amk-bench decode flags...]
  local v=$1 tag=$2 m=$3
  shift 3
  timeout 200 "$ROOT/build-ab-$v/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/$m" --ctx 128 --tokens 30 \
    --json "$@" >"$L/$v-$tag.json" 2>"$L/$v-$tag.err"
  R[$v.$tag]="${R[$v.$tag]:-} $(ms "$L/$v-$tag.json" "$L/$v-$tag.err")"
}
for round in $(seq 1 "${AMK_ROUNDS:-2}"); do
  for v in ${AMK_BENCH-${names[*]}}; do
    run "$v" 1b llama-3.2-1b.json
    [ "$round" -le "${AMK_ROUNDS_8B:-1}" ] && run "$v" 8b llama-3-8b.json
  done
  for v in ${AMK_NOCHECK:-}; do run "$v" 1b-nocheck llama-3.2-1b.json --baseline none; done
done
for v in ${AMK_TRACE-${names[*]}}; do
  timeout 200 "$ROOT/build-ab-$v/tools/amk-bench" decode --model "$ROOT/tests/fixtures/configs/llama-3.2-1b.json" \
    --ctx 128 --tokens 20 --profile --baseline none --trace "$L/trace-$v.json" >"$L/profile-$v.txt" 2>&1
  python3 "$ROOT/tools/profiling/chunk_timeline.py" "$L/trace-$v.json" >"$L/chunks-$v.txt" 2>&1
  python3 "$ROOT/tools/profiling/stage_runs.py" "$L/trace-$v.json" >"$L/runs-$v.txt" 2>&1
  python3 "$ROOT/tools/profiling/trace_stages.py" "$L/trace-$v.json" 100 200 >"$L/stages-$v.txt" 2>&1
  python3 "$ROOT/tools/profiling/probe_offsets.py" "$L/trace-$v.json" >"$L/probes-$v.txt" 2>&1  # -DAMK_TRACE_PROBE builds
  gzip -f "$L/trace-$v.json"
  echo "== $v"
  cat "$L/chunks-$v.txt"
  head -8 "$L/probes-$v.txt"
done
if [ -n "${AMK_TEST:-}" ]; then
  timeout 300 "$ROOT/build-ab-$AMK_TEST/tests/gpu/amk_gpu_tests" "${AMK_AB_TEST_FILTER:-[gpu]}" >"$L/gpu-tests.log" 2>&1
  R[$AMK_TEST.tests]="rc=$? $(grep -E '^test cases:|^All tests passed' "$L/gpu-tests.log" | tail -1)"
  grep -B4 -A8 -E "FAILED" "$L/gpu-tests.log" | head -40
fi
echo "================ ab-trace (ms per token at ctx 128, one per round) ================"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
grep -A30 "^====" "$L/build-ab.txt" | grep -v "^NVIDIA\|^====" 
for k in $(printf '%s\n' "${!R[@]}" | sort); do printf '%-22s %s\n' "$k" "${R[$k]}"; done
