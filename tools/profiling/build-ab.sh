#!/usr/bin/env bash
# tools/profiling/build-ab.sh NAME=CMAKE_ARGS... : a same-call A/B of build variants on the GPU
# machine. Each variant is this tree configured with extra CMake arguments, given as shell words
# (e.g. "b384=-DAMK_BLOCK_THREADS=384", "base=" for the defaults, or
# "u6='-DCMAKE_CUDA_FLAGS=-Xptxas=-v -DAMK_ATTN_KEYS_IN_FLIGHT=6'"), into build-ab-NAME, built in
# parallel (sm_90a, Release, -Werror, ptxas report), its [gpu] tests run, then the Llama-1B (ctx
# 128) and Llama-3-8B decode benchmarks alternated over the variants AMK_AB_ROUNDS times (default 2), so a
# drift of the machine shows as a drift, not as a difference. A table is printed last; logs go to
# $OUT (else build-ab-logs).
# env: AMK_SKIP_8B=1, AMK_SKIP_TESTS=1 (build amk-bench only), AMK_AB_TEST_FILTER (Catch2 filter,
#   default [gpu]), AMK_AB_ROUNDS (2), AMK_AB_CTX (the 1B --ctx list, 128),
#   AMK_AB_PREBUILT=DIR or its .tar.gz (run DIR/NAME/tools/amk-bench and tests/gpu/amk_gpu_tests, built without a GPU by
#   tools/profiling/prebuild-ab.sh, instead of building here: the variants' arguments are then
#   only labels), AMK_AB_ARGS (more amk-bench decode flags for every run, e.g. "--baseline none" for
#   a timing emulation whose results are wrong on purpose: docs/PERFORMANCE.md rows 137, 159)
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LOGS="${OUT:-$ROOT/build-ab-logs}"
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"
[ $# -ge 1 ] || { echo "usage: $0 NAME=CMAKE_ARGS..." >&2; exit 2; }

names=()
declare -A ARGS R
for v in "$@"; do
  n="${v%%=*}"
  [[ "$n" =~ ^[a-z0-9_-]+$ ]] || { echo "bad variant name '$n' (want [a-z0-9_-]+)" >&2; exit 2; }
  names+=("$n")
  ARGS[$n]="${v#*=}"
done
jobs_each=$(( ${AMK_DEVICE_JOBS:-16} / ${#names[@]} ))
[ "$jobs_each" -ge 1 ] || jobs_each=1

bench_of() { echo "$ROOT/build-ab-$1/tools/amk-bench"; }
tests_of() { echo "$ROOT/build-ab-$1/tests/gpu/amk_gpu_tests"; }
if [ -n "${AMK_AB_PREBUILT:-}" ]; then
  PRE="$AMK_AB_PREBUILT"
  if [[ "$PRE" == *.tar.gz ]]; then  # prebuild-ab.sh's pack: unpacked beside it
    tar xzf "$PRE" -C "$(dirname "$PRE")" || exit 2
    PRE="$(dirname "$PRE")/$(tar tzf "$PRE" | head -1 | cut -d/ -f1)"
  fi
  PRE="$(cd "$PRE" && pwd)"
  bench_of() { echo "$PRE/$1/tools/amk-bench"; }
  tests_of() { echo "$PRE/$1/tests/gpu/amk_gpu_tests"; }
  for n in "${names[@]}"; do
    # The [gpu] tests open fixtures under the tree they were built in (AMK_SOURCE_DIR).
    src="$(cat "$PRE/$n/SOURCE_DIR" 2>/dev/null || echo "$ROOT")"
    if [ "$src" != "$ROOT" ] && [ ! -e "$src" ]; then
      { mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"; } 2>/dev/null ||
        echo "warning: cannot link $src to $ROOT: the [gpu] tests that open fixtures will fail" >&2
    fi
    cp "$PRE/$n/ptxas.txt" "$LOGS/build-$n.log" 2>/dev/null || echo "no prebuilt variant $n" >"$LOGS/build-$n.log"
    [ -x "$(bench_of "$n")" ] && echo 0 >"$LOGS/build-$n.rc" || echo "missing" >"$LOGS/build-$n.rc"
  done
else
  targets="amk-bench amk_gpu_tests"
  [ "${AMK_SKIP_TESTS:-0}" = 1 ] && targets=amk-bench
  for n in "${names[@]}"; do
    (
      eval "extra=(${ARGS[$n]})"  # shell words: quote an argument with spaces ('-DCMAKE_CUDA_FLAGS=a b')
      cmake -S "$ROOT" -B "$ROOT/build-ab-$n" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON -DAMK_CUDA_ARCHITECTURES=90a \
        -DAMK_WERROR=ON -DCMAKE_CUDA_FLAGS="-Xptxas=-v -lineinfo" "${extra[@]}" >"$LOGS/configure-$n.log" 2>&1 &&
        cmake --build "$ROOT/build-ab-$n" -j"$jobs_each" --target $targets >"$LOGS/build-$n.log" 2>&1
      echo $? >"$LOGS/build-$n.rc"
    ) &
  done
  wait
fi
for n in "${names[@]}"; do
  R[$n.build]="rc=$(cat "$LOGS/build-$n.rc")"
  R[$n.regs]="$(grep -A4 'entry function.*amk_persistent_kernel' "$LOGS/build-$n.log" | grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')"
  grep -E "error" "$LOGS/build-$n.log" | head -10
  if [ "${AMK_SKIP_TESTS:-0}" != 1 ]; then
    timeout 300 "$(tests_of "$n")" "${AMK_AB_TEST_FILTER:-[gpu]}" >"$LOGS/gpu-tests-$n.log" 2>&1
    R[$n.tests]="rc=$? $(grep -E '^test cases:|^All tests passed' "$LOGS/gpu-tests-$n.log" | tail -1)"
    grep -B4 -A8 -E "FAILED" "$LOGS/gpu-tests-$n.log" | head -40
  fi
done

bench() {  # variant, round, model tag, model config, ctx list
  local out="$LOGS/bench-$1-$3-$2"
  # shellcheck disable=SC2086  # AMK_AB_ARGS is a word list
  timeout 300 "$(bench_of "$1")" decode --model "$ROOT/tests/fixtures/configs/$4" --ctx "$5" \
    --tokens 30 --json ${AMK_AB_ARGS:-} >"$out.json" 2>"$out.err"
  R[$1.$3]="${R[$1.$3]:-}$(python3 -c "
import json; j = json.load(open('$out.json')); print(' '.join(f\"{r['amk_ms_per_token']:.3f}\" for r in j['results']) + ' |')
" 2>/dev/null || echo "FAILED: $(tail -1 "$out.err") |") "
}
launch() {  # variant: empty launch / per task / per hop (us)
  R[$1.launch]="${R[$1.launch]:-}$(timeout 120 "$(bench_of "$1")" launch --json 2>/dev/null | python3 -c "
import json, sys; j = json.load(sys.stdin); print(f\"{j['empty_launch_us']:.2f} ({j['empty_kernel_us']:.2f}) / {j['per_task_us']:.3f} / {j['per_hop_us']:.3f} |\")
" 2>/dev/null || echo "FAILED |") "
}
for round in $(seq 1 "${AMK_AB_ROUNDS:-2}"); do
  for n in "${names[@]}"; do
    launch "$n"
    bench "$n" "$round" 1b llama-3.2-1b.json "${AMK_AB_CTX:-128}"
    [ "${AMK_SKIP_8B:-0}" != 1 ] && bench "$n" "$round" 8b llama-3-8b.json 128
  done
done

echo "================ build-ab (ms per token, one column per round; launch: empty / per task / per hop us)${AMK_AB_ARGS:+; decode flags: $AMK_AB_ARGS} ================"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
for n in "${names[@]}"; do
  printf '%-10s [%s]\n' "$n" "${ARGS[$n]}"
  for k in build regs tests launch 1b 8b; do [ -n "${R[$n.$k]+x}" ] && printf '  %-6s %s\n' "$k" "${R[$n.$k]}"; done
done
