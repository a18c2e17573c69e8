#!/usr/bin/env bash
# tools/device-check.sh: everything the GPU machine should check, in one call. Configure and build
# the CUDA VM for sm_90a (Release), run amk_gpu_tests, compute-sanitizer memcheck + racecheck on a
# small [gpu] case, the kernel's resource report and a SASS check for 16-byte weight loads, a short
# benchmark when tools/amk-bench exists, then a summary table printed LAST. Full logs go to $OUT
# when it is set (else build-device/logs).
#
# usage: tools/device-check.sh [ARCH]          ARCH defaults to 90a (use 80, 89, ... elsewhere)
# env:   AMK_DEVICE_JOBS (16), AMK_DEVICE_BUILD (build-device), AMK_TEST_FILTER ([gpu])
set -u -o pipefail

ARCH="${1:-90a}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${AMK_DEVICE_BUILD:-$ROOT/build-device}"
JOBS="${AMK_DEVICE_JOBS:-16}"
LOGS="${OUT:-$BUILD/logs}"
FILTER="${AMK_TEST_FILTER:-[gpu]}"
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"

declare -A RESULT
note() { printf '== %s\n' "$*" | tee -a "$LOGS/device-check.log"; }

# ---------------------------------------------------------------------------------------------
note "device"
DEVICE="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
DEVICE="${DEVICE:-unknown (nvidia-smi failed)}"
note "$DEVICE"

# ---------------------------------------------------------------------------------------------
note "configure + build (arch $ARCH, -j$JOBS)"
CUDA_ARCH_FLAGS="-DAMK_CUDA_ARCHITECTURES=$ARCH"
if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON "$CUDA_ARCH_FLAGS" -DAMK_WERROR=ON \
      -DCMAKE_CUDA_FLAGS="-Xptxas=-v" >"$LOGS/configure.log" 2>&1 &&
   cmake --build "$BUILD" -j"$JOBS" --target amk_gpu_tests >"$LOGS/build.log" 2>&1; then
  RESULT[build]="ok"
else
  # 90a through CMake's shorthand can misbehave on some nvcc versions: retry with explicit gencode.
  if [ "$ARCH" = "90a" ]; then
    note "build failed; retrying with -gencode=arch=compute_90a,code=sm_90a"
    rm -rf "$BUILD"
    if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON -DAMK_CUDA_ARCHITECTURES=OFF \
          -DCMAKE_CUDA_FLAGS="-gencode=arch=compute_90a,code=sm_90a -Xptxas=-v" -DAMK_WERROR=ON \
          >"$LOGS/configure.log" 2>&1 &&
       cmake --build "$BUILD" -j"$JOBS" --target amk_gpu_tests >"$LOGS/build.log" 2>&1; then
      RESULT[build]="ok (gencode)"
    else
      RESULT[build]="FAILED"
    fi
  else
    RESULT[build]="FAILED"
  fi
fi
tail -n 30 "$LOGS/build.log"
BIN="$BUILD/tests/gpu/amk_gpu_tests"

# Kernel resources from the ptxas report (entry function line + the per-opcode functions).
grep -A3 "amk_persistent_kernel" "$LOGS/build.log" | grep -E "registers|spill|stack" | head -4 >"$LOGS/ptxas-kernel.txt" || true
RESULT[kernel]="$(grep -o 'Used [0-9]* registers' "$LOGS/ptxas-kernel.txt" | head -1), $(grep -o '[0-9]* bytes spill stores' "$LOGS/ptxas-kernel.txt" | head -1)"

# SASS: the GEMV micro-kernels must stream weights with 128-bit loads.
OBJ="$(find "$BUILD" -name 'persistent_kernel.cu.o' | head -1)"
if [ -n "$OBJ" ] && command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$OBJ" >"$LOGS/persistent_kernel.sass" 2>&1 || true
  N128="$(awk '/Function : .*gemv_tile_run/{f=1} /Function : /&&!/gemv_tile_run/{f=0} f&&/LDG[^ ]*128/{n++} END{print n+0}' "$LOGS/persistent_kernel.sass")"
  NLOCAL="$(grep -cE '\b(LDL|STL)' "$LOGS/persistent_kernel.sass" || true)"
  RESULT[sass]="gemv_tile_run LDG.128 x$N128; LDL/STL in kernel: $NLOCAL"
else
  RESULT[sass]="skipped (no object or cuobjdump)"
fi

# ---------------------------------------------------------------------------------------------
count_catch() {  # "passed/failed" from a Catch2 console log
  local log="$1" line
  line="$(grep -E '^test cases:|^All tests passed' "$log" | tail -1)"
  echo "${line:-no summary (crashed?)}"
}

if [ -x "$BIN" ]; then
  note "amk_gpu_tests $FILTER"
  "$BIN" "$FILTER" --durations yes >"$LOGS/gpu-tests.log" 2>&1
  rc=$?
  RESULT[tests]="rc=$rc: $(count_catch "$LOGS/gpu-tests.log")"
  grep -E "FAILED|failed|with expansion|REQUIRE|CHECK|kernel:" "$LOGS/gpu-tests.log" | head -40
  grep -m1 "kernel:" "$LOGS/gpu-tests.log" >"$LOGS/kernel-report.txt" || true

  # The AMK_PREFETCH=0 path once more on the GEMV cases.
  AMK_PREFETCH=0 "$BIN" "[op:gemv_tile],[op:fused]" >"$LOGS/gpu-tests-noprefetch.log" 2>&1
  RESULT[no-prefetch]="rc=$?: $(count_catch "$LOGS/gpu-tests-noprefetch.log")"

  if command -v compute-sanitizer >/dev/null; then
    note "compute-sanitizer memcheck / racecheck"
    SMALL="gpu vm: a device error names the task and the next launch works"
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" "$SMALL" >"$LOGS/memcheck.log" 2>&1
    RESULT[memcheck-vm]="rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1)"
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" "gpu GEMV_TILE with several rows, and GEMM_TILE on a row tile" \
      >"$LOGS/memcheck-gemv.log" 2>&1
    RESULT[memcheck-gemv]="rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck-gemv.log" | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN" \
      "gpu split-KV ATTENTION_TILE partials + ATTENTION_COMBINE match the CPU reference" >"$LOGS/racecheck.log" 2>&1
    RESULT[racecheck-attn]="rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/racecheck.log" | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN" "gpu SOFTMAX and SAMPLE_ARGMAX match the CPU reference" \
      >"$LOGS/racecheck-rows.log" 2>&1
    RESULT[racecheck-rows]="rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/racecheck-rows.log" | tail -1)"
  else
    RESULT[sanitizers]="skipped (compute-sanitizer not found)"
  fi
else
  RESULT[tests]="not run (no binary)"
fi

# ---------------------------------------------------------------------------------------------
# Llama-3.2-1B-shaped decode (bf16, seeded random weights, batch 1, ctx 128) through amk-run on
# the CUDA VM, against the device's copy bandwidth measured in the same call (torch, code amk did
# not write). Latency is the median of the 64 steps after a 128-token prompt.
note "decode benchmark: Llama-3.2-1B shape, bf16, ctx 128"
if cmake --build "$BUILD" -j"$JOBS" --target amk-compile amk-run >"$LOGS/bench-build.log" 2>&1; then
  TGT=h100; case "$DEVICE" in *H200*) TGT=h200 ;; esac
  "$BUILD/tools/amk-compile" "$ROOT/tests/fixtures/configs/llama-3.2-1b.json" --target "$TGT" --max-seq 256 \
    --dtype bf16 -o "$BUILD/llama-1b.json" >"$LOGS/bench-compile.log" 2>&1
  PROMPT="$(seq -s, 1 128)"
  timeout 300 "$BUILD/tools/amk-run" "$BUILD/llama-1b.json" --backend cuda --random-weights 1 \
    --prompt-ids "$PROMPT" --max-tokens 64 --json >"$LOGS/bench-run.json" 2>"$LOGS/bench-run.err"
  RUN_RC=$?
  COPY_GBS="$(python3 - <<'PY' 2>/dev/null
import torch
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t = []
for _ in range(20):
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); t.append(s.elapsed_time(e))
t.sort(); print(f"{2 * n / (t[len(t) // 2] * 1e-3) / 1e9:.0f}")
PY
)"
  WBYTES="$(grep -o 'weights *[0-9.]* MB' "$LOGS/bench-compile.log" | grep -o '[0-9.]*' | head -1)"
  LAT_US="$(python3 -c "import json;print(round(json.load(open('$LOGS/bench-run.json'))['latency_us']['generation_median'],1))" 2>/dev/null)"
  if [ "$RUN_RC" = 0 ] && [ -n "$LAT_US" ] && [ -n "$COPY_GBS" ] && [ -n "$WBYTES" ]; then
    PCT="$(python3 -c "print(round(100 * ($WBYTES * 1e6 / ($LAT_US * 1e-6)) / ($COPY_GBS * 1e9), 1))")"
    RESULT[bench]="llama-1b bf16 ctx128: ${LAT_US} us/token; ${WBYTES} MB weights; copy ${COPY_GBS} GB/s; ${PCT}% of copy bw"
  else
    RESULT[bench]="FAILED (rc=$RUN_RC): $(tail -1 "$LOGS/bench-run.err" 2>/dev/null)"
  fi
else
  RESULT[bench]="build of amk-compile/amk-run FAILED"
fi

# ---------------------------------------------------------------------------------------------
{
  echo
  echo "================ amk device-check summary ================"
  printf '%-16s %s\n' "device" "$DEVICE"
  printf '%-16s %s\n' "arch" "$ARCH"
  for k in build kernel sass tests no-prefetch memcheck-vm memcheck-gemv racecheck-attn racecheck-rows sanitizers bench; do
    [ -n "${RESULT[$k]+x}" ] && printf '%-16s %s\n' "$k" "${RESULT[$k]}"
  done
  [ -s "$LOGS/kernel-report.txt" ] && printf '%-16s %s\n' "launch" "$(sed 's/.*kernel: //' "$LOGS/kernel-report.txt" | cut -c1-200)"
  printf '%-16s %s\n' "logs" "$LOGS"
} | tee -a "$LOGS/device-check.log"
