#!/usr/bin/env bash
# scripts/run-fuzz.sh [SECONDS_PER_TARGET] [TARGET...]: build the libFuzzer targets (tests/fuzz, clang,
# ASan+UBSan) into build-fuzz/ and run each for SECONDS_PER_TARGET (default 30) on one core, starting
# from the committed seeds in tests/fuzz/corpus/<target>/ (read-only; new inputs go to
# build-fuzz/corpus/<target>/). Any crash, leak, timeout or sanitizer report fails the script and
# leaves the input in build-fuzz/findings/. AMK_FUZZ_RUNS=N runs N inputs per target instead of a
# time bound. Prints the executions per target and their sum (docs/RELIABILITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
if (($# > 0)); then shift; fi
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(program_json validate safetensors_header model_config); fi
build_dir=${AMK_FUZZ_BUILD_DIR:-build-fuzz}

# Debian 12: clang-14 and its runtime libraries (libclang_rt.fuzzer) come from these packages.
if ! command -v clang++ >/dev/null 2>&1 || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
    >/dev/null 2>&1; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y clang libclang-rt-14-dev
fi

# Only the libraries the targets link are built (not the tools, VMs or the Catch2 suite). No
# -DAMK_WERROR: the project is warning-clean under GCC (the other builds); a clang-only warning in
# code the fuzzers do not touch should not fail the fuzz stage.
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DAMK_FUZZ=ON -DAMK_BUILD_TESTS=OFF \
  -DAMK_CUDA=OFF -DAMK_HIP=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
for t in "${targets[@]}"; do
  cmake --build "$build_dir" -j "${AMK_JOBS:-1}" --target "fuzz_$t"
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build_dir/findings"
bound=(-max_total_time="$seconds")
if [ -n "${AMK_FUZZ_RUNS:-}" ]; then bound=(-runs="$AMK_FUZZ_RUNS"); fi
failed=0
total=0
summary=()
for t in "${targets[@]}"; do
  work="$build_dir/corpus/$t"
  log="$build_dir/fuzz_$t.log"
  mkdir -p "$work"
  echo "=== run-fuzz: $t (${bound[*]}) ==="
  # -timeout: an input taking more than 10 s is a hang (a finding); -max_len fits the seed programs.
  if "$build_dir/tests/fuzz/fuzz_$t" "${bound[@]}" -timeout=10 -max_len=16384 -print_final_stats=1 \
      -artifact_prefix="$build_dir/findings/$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed=1
    tail -n 40 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  total=$((total + ${execs:-0}))
  summary+=("$t: ${execs:-?} execs, $status (log: $log)")
done

echo "=== run-fuzz: summary ==="
for s in "${summary[@]}"; do echo "  $s"; done
echo "  total: $total execs"
if ((failed == 0)); then echo "run-fuzz: no findings"; else echo "run-fuzz: FINDINGS in $build_dir/findings/"; fi
exit "$failed"
