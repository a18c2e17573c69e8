#!/usr/bin/env python3
"""tools/profiling/trace_stages.py TRACE.json[.gz] FIRST LAST: per stage of a traced launch
(amk-bench decode --profile --trace), the span from its first task's start to its last task's end,
the gap after the previous stage, and the median / longest task run. Stages are the task labels
without their [..] tile suffix, in order of first start; FIRST..LAST picks a range of them."""
import collections
import re
import sys

import chrome_trace

if len(sys.argv) != 4:
    sys.exit(__doc__)
ev=chrome_trace.task_runs(chrome_trace.load(sys.argv[1]))
st=collections.OrderedDict()
for e in sorted(ev,key=lambda e:e['ts']):
    lab=re.sub(r'\[.*','',e['args']['label'])
    st.setdefault(lab,[]).append(e)
prev_end=None
items=list(st.items())
lo,hi=int(sys.argv[2]),int(sys.argv[3])
for lab,es in items[lo:hi]:
    b=min(e['ts'] for e in es); en=max(e['ts']+e['dur'] for e in es)
    runs=sorted(e['dur'] for e in es)
    ends=sorted(e['ts']+e['dur'] for e in es)
    sms=len(set(e['tid'] for e in es))
    print(f"{lab:22s} n={len(es):4d} sms={sms:3d} begin={b:8.1f} end={en:8.1f} span={en-b:6.1f} gap={b-prev_end if prev_end else 0:5.1f} run med={runs[len(runs)//2]:5.1f} max={runs[-1]:5.1f} 50%end={ends[len(ends)//2]-b:5.1f}")
    prev_end=en
