#!/usr/bin/env python3
"""tools/profiling/probe_offsets.py TRACE.json[.gz] [LABEL...]: where a -DAMK_TRACE_PROBE=N build's
probe point N falls inside each task, per stage kind (attention, o_proj, ...): the median and p90
of (probe - run begin) in us, next to the run's median. The probe overwrites the task's
t_wait_begin (instructions/device_common.cuh, AMK_PROBE), so its `wait` slice starts at the
probe; tasks whose wait slice starts before their run (the probe was not reached) are left out.
With labels, only those kinds."""
import collections
import sys

import chrome_trace

if len(sys.argv) < 2:
    sys.exit(__doc__)
want = set(sys.argv[2:])
trace = chrome_trace.load(sys.argv[1])
runs = {}
for e in chrome_trace.task_runs(trace):
    runs[(e['args']['task'], e['args']['step'])] = e
offsets = collections.defaultdict(list)
durs = collections.defaultdict(list)
for e in chrome_trace.slices(trace):
    if e['cat'] != 'wait':
        continue
    run = runs.get((e['args']['task'], e['args']['step']))
    if run is None:
        continue
    kind = chrome_trace.stage_kind(e['args']['label'])
    if want and kind not in want:
        continue
    off = e['ts'] - run['ts']
    if off >= 0:
        offsets[kind].append(off)
        durs[kind].append(run['dur'])
for kind, xs in sorted(offsets.items(), key=lambda kv: -len(kv[1])):
    xs.sort()
    ds = sorted(durs[kind])
    print(f"{kind:20s} tasks={len(xs):5d} probe - run begin: median={xs[len(xs) // 2]:7.2f} us  "
          f"p90={xs[len(xs) * 9 // 10]:7.2f}  (run median {ds[len(ds) // 2]:7.2f})")
