#!/usr/bin/env bash
# tools/profiling/sm-claim-ab.sh: the A/B that decides the SM claim (docs/SM_BALANCE.md): the
# `[sm_balance]` [gpu] tests on the claim build, then per model the base build (no fast SMs) and
# the claim build with AMK_FAST_SMS=auto, in one call. Needs both prebuilt and unpacked:
#   bash tools/profiling/prebuild-ab.sh base= claim=-DAMK_SM_CLAIM      (here)
#   source tools/profiling/carry-env.sh; bash tools/profiling/sm-claim-ab.sh   (on the device;
#   carry [".deps/root/usr/lib/x86_64-linux-gnu", "build-pack/build-carry.tar.gz"])
# env: AMK_AB_ROUNDS (1), AMK_CLAIM_RATIO (a --fast-sm-ratio for the claim runs; H100 1.09 is the
# preset's default, an H200's fast SMs ran ~1.05 in o_proj: row 211). Logs to $OUT/logs.tgz.
set -u
: "${P:?source tools/profiling/carry-env.sh first}"
L=${OUT:-/tmp}/logs; mkdir -p "$L"
ratio=(); [ -n "${AMK_CLAIM_RATIO:-}" ] && ratio=(--fast-sm-ratio "$AMK_CLAIM_RATIO")
timeout 60 "$P/claim/tests/gpu/amk_gpu_tests" "[sm_balance]" >"$L/gpu-claim.log" 2>&1
echo "gpu claim [sm_balance] rc=$? ($SECONDS s) $(tail -2 "$L/gpu-claim.log" | head -1)"
grep -B3 -A12 FAILED "$L/gpu-claim.log" | head -30
for r in $(seq 1 "${AMK_AB_ROUNDS:-1}"); do
  for m in llama-3.2-1b llama-3-8b; do
    for v in base claim; do
      e=(); a=(); [ $v = claim ] && e=(AMK_FAST_SMS=auto) && a=("${ratio[@]}")
      f="$L/$v-$m-r$r"
      env "${e[@]}" timeout 90 "$P/$v/tools/amk-bench" decode --model "tests/fixtures/configs/$m.json" --ctx 128 \
        --tokens 30 --json "${a[@]}" >"$f.json" 2>"$f.err"
      ms=$(python3 -c "import json; print('%.3f' % json.load(open('$f.json'))['results'][0]['amk_ms_per_token'])" 2>/dev/null ||
        echo "FAIL $(tail -1 "$f.err")")
      echo "r$r $v ${e[*]} ${a[*]} $m: $ms ($SECONDS s)"
    done
  done
done
[ -n "${OUT:-}" ] && tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
echo "done ($SECONDS s)"
