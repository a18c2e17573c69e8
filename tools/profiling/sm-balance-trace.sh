#!/usr/bin/env bash
# tools/profiling/sm-balance-trace.sh (session 54's second call, never run: no device time left):
# the lm_head bound (15b252d) on the 1B, and where the 8B's fold stage ends with 12 fast SMs:
# traced base against claim (AMK_FAST_SMS=12, ratio 1.09), read by worker_speed.py, traces in $OUT.
# Needs base= and claim=-DAMK_SM_CLAIM prebuilt (tools/profiling/prebuild-ab.sh); carry
# [".deps/root/usr/lib/x86_64-linux-gnu", "build-pack/build-carry.tar.gz"].
source tools/profiling/carry-env.sh
L=$OUT/logs; mkdir -p $L
timeout 60 $P/claim/tests/gpu/amk_gpu_tests "[sm_balance]" > $L/gpu-claim.log 2>&1; echo "gpu claim [sm_balance] rc=$? ($SECONDS s) $(tail -2 $L/gpu-claim.log | head -1)"
run() {  # NAME VARIANT MODEL [ENV...] -- [ARGS...]
  local n=$1 b=$2 m=$3; shift 3; local e=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 120 $P/$b/tools/amk-bench decode --model tests/fixtures/configs/$m.json "$@" > $L/$n.out 2> $L/$n.err
  echo "$n rc=$? ($SECONDS s)"
}
for r in 1 2; do
  run base-1b-r$r base llama-3.2-1b -- --ctx 128 --tokens 30 --json
  run claim-1b-r$r claim llama-3.2-1b AMK_FAST_SMS=12 -- --ctx 128 --tokens 30 --json
done
run trace-base-8b base llama-3-8b -- --ctx 128,128 --tokens 5 --profile --baseline none --trace $L/trace-base-8b.json
run trace-claim-8b claim llama-3-8b AMK_FAST_SMS=12 -- --ctx 128,128 --tokens 5 --profile --baseline none --trace $L/trace-claim-8b.json
for f in $L/*-r[0-9].out; do
  python3 -c "import json,sys; d=json.load(open('$f')); r=d['results'][0]; print('$(basename $f .out)', '%.3f ms' % r['amk_ms_per_token'], '%.2f%%' % r['amk_pct_of_copy_bw'], d['device'])" 2>/dev/null || echo "$(basename $f) FAIL $(tail -1 ${f%.out}.err)"
done
python3 tools/profiling/worker_speed.py $L/trace-base-8b.json $L/trace-claim-8b.json --kinds mlp_fold,o_proj 2>&1 | tail -30
gzip -f $L/trace-*.json
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L; echo "done ($SECONDS s)"
