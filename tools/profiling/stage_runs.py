#!/usr/bin/env python3
"""tools/profiling/stage_runs.py TRACE.json[.gz] [LABEL...]: the median task run (us) of each stage
kind of a traced launch (amk-bench decode --profile --trace) over all layers, e.g. gate_proj,
down_proj: how long one SM's task takes, apart from the gaps between stages. With labels, only
those kinds."""
import collections
import sys

import chrome_trace

if len(sys.argv) < 2:
    sys.exit(__doc__)
want = set(sys.argv[2:])
runs = collections.defaultdict(list)
for e in chrome_trace.task_runs(chrome_trace.load(sys.argv[1])):
    kind = chrome_trace.stage_kind(e['args']['label'])
    if not want or kind in want:
        runs[kind].append(e['dur'])
for kind, rs in sorted(runs.items(), key=lambda kv: -sum(kv[1])):
    rs.sort()
    print(f"{kind:20s} tasks={len(rs):5d} run median={rs[len(rs) // 2]:7.2f} us  p90={rs[len(rs) * 9 // 10]:7.2f}  total={sum(rs):9.1f}")
