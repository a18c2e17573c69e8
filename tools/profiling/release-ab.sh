#!/usr/bin/env bash
# tools/profiling/release-ab.sh: the A/B of a release that does not wait for the ring's bulk copies
# (docs/PERFORMANCE.md row 206), for one device call; prepared in session 51, whose device budget
# went to refused starts. Needs build-pack/fence_probe and the prebuilt variants base, hold, sc,
# holdsc (docs/STATUS.md "Session 51" says how to make them).
# (1) amk-fence-probe with release flavours and an L2-prefetch mode: does MEMBAR.SC (sc) or a
#     bulk L2 prefetch (l2pf) keep a release from waiting for the SM's bulk copies?
# (2) [gpu] on hold (-DAMK_HOLD_LATER_COPIES) and holdsc (+ -DAMK_RELEASE_FENCE_SC);
# (3) a same-call A/B (two rounds): base hold, plus sc holdsc when the probe's 132-SM "other"
#     release is less than half as long with sc as with rel;
# (4) hold with a third ring slot (env-ab, one round), then one traced decode of hold and of base
#     (the hops after streamed stages: trace_stages.py), as time allows.
# carry [".deps/root", "build-pack/build-carry.tar.gz", "build-pack/fence_probe"]; run: bash tools/profiling/release-ab.sh
source tools/profiling/carry-env.sh
L=$OUT/logs; mkdir -p $L
timeout 120 build-pack/fence_probe > $L/probe.txt 2>&1; echo "probe rc=$? ($SECONDS s)"; cat $L/probe.txt
rel=$(awk '$1>1 && $2=="other" && $3=="rel" {print $4}' $L/probe.txt); sc=$(awk '$1>1 && $2=="other" && $3=="sc" {print $4}' $L/probe.txt)
V="base= hold="; if [ -n "$rel" ] && [ -n "$sc" ] && [ $((2 * sc)) -lt "$rel" ]; then V="$V sc= holdsc="; fi
echo "variants: $V (rel $rel, sc $sc cycles)"
for v in hold holdsc; do
  timeout 90 $P/$v/tests/gpu/amk_gpu_tests "[gpu]" > $L/gpu-$v.log 2>&1; echo "gpu $v rc=$? ($SECONDS s) $(tail -2 $L/gpu-$v.log | head -1)"
  grep -B3 -A12 FAILED $L/gpu-$v.log | head -30
done
AMK_AB_PREBUILT=$P AMK_SKIP_TESTS=1 AMK_AB_ROUNDS=2 OUT=$L/ab bash tools/profiling/build-ab.sh $V > $L/ab.txt 2>&1
echo "== A/B ($SECONDS s)"; tail -26 $L/ab.txt
if [ $SECONDS -lt 380 ]; then  # row 205's third slot lost to the copies a release waits for: again with hold
  AMK_AB_ROUNDS=1 AMK_DEVICE_BUILD=$P/hold OUT=$L/env bash tools/profiling/env-ab.sh - AMK_RING_SLOTS=3 > $L/env.txt 2>&1
  echo "== hold, 3 ring slots ($SECONDS s)"; tail -4 $L/env.txt
fi
for v in hold base; do
  [ $SECONDS -lt 470 ] || { echo "trace $v skipped ($SECONDS s)"; break; }
  AMK_DEVICE_BUILD=$P/$v OUT=$L/tr-$v timeout 100 bash tools/profiling/trace-ab.sh - > $L/trace-$v.txt 2>&1
  echo "== traces $v ($SECONDS s)"; grep -E "^==|^kind|^mlp_fold |^q_proj |^o_proj |^k_proj |^v_proj |^lm_head |^attention |^L8\." $L/trace-$v.txt | head -44
  rm -f $L/tr-$v/*.json.gz
done
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L; echo "done ($SECONDS s)"
