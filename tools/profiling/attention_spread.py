#!/usr/bin/env python3
"""tools/profiling/attention_spread.py TRACE.json[.gz] [KIND]: what sets each layer's attention
stage (`amk-bench decode --profile --trace`). The stage ends with its slowest task, so a stage
whose tasks run 7.6 us on average but 11 us at worst loses the difference in every layer. Per
(step, layer) it takes the tasks of KIND (default: the stage kind holding "attention", e.g.
ROPE_ATTENTION's `attention`), then prints the medians over layers of: the spread of the tasks'
starts, the median and the slowest run, the stage's span (first start to last end) and how much
of it the slowest task's late start or long run explains; then which heads and which SMs ran the
slowest task most often, and what ran on that SM just before it."""
import collections
import re
import statistics
import sys

import chrome_trace

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
runs = chrome_trace.task_runs(chrome_trace.load(sys.argv[1]))
want = sys.argv[2] if len(sys.argv) == 3 else None


def layer_of(label):
    m = re.match(r'^L(\d+)\.', label)
    return int(m.group(1)) if m else -1


kinds = collections.Counter(chrome_trace.stage_kind(e['args']['label']) for e in runs)
if want is None:
    cands = [k for k in kinds if 'attention' in k and 'combine' not in k]
    if not cands:
        sys.exit(f"no attention stage in the trace; kinds: {sorted(kinds)}")
    want = max(cands, key=lambda k: kinds[k])

by_sm = collections.defaultdict(list)  # (step, sm) -> runs in time order: the task before each
for e in runs:
    by_sm[(e['args']['step'], e['args']['sm'])].append(e)
for v in by_sm.values():
    v.sort(key=lambda e: e['ts'])
before = {}
for v in by_sm.values():
    for prev, cur in zip(v, v[1:]):
        before[id(cur)] = prev

stages = collections.defaultdict(list)
for e in runs:
    if chrome_trace.stage_kind(e['args']['label']) == want:
        stages[(e['args']['step'], layer_of(e['args']['label']))].append(e)
if not stages:
    sys.exit(f"no task of kind {want!r}")

rows = []
slow_heads, slow_sms, slow_before = collections.Counter(), collections.Counter(), collections.Counter()
for key, ts in sorted(stages.items()):
    first = min(e['ts'] for e in ts)
    last_start = max(e['ts'] for e in ts)
    end = max(e['ts'] + e['dur'] for e in ts)
    durs = sorted(e['dur'] for e in ts)
    slow = max(ts, key=lambda e: e['ts'] + e['dur'])  # the task that ends the stage
    rows.append(dict(spread=last_start - first, median=statistics.median(durs), longest=durs[-1],
                     span=end - first, late=slow['ts'] - first, slow_run=slow['dur']))
    slow_heads[re.sub(r'^.*\[', '[', slow['args']['label'])] += 1
    slow_sms[slow['args']['sm']] += 1
    prev = before.get(id(slow))
    slow_before[chrome_trace.stage_kind(prev['args']['label']) if prev else '(first task)'] += 1


def med(k):
    return statistics.median(r[k] for r in rows)


print(f"kind {want!r}: {len(rows)} stages (step x layer), {statistics.median(len(v) for v in stages.values()):.0f} tasks each")
print(f"median over stages (us): span {med('span'):.2f} = the last task's start {med('late'):.2f} after the first"
      f" + its run {med('slow_run'):.2f}; starts spread {med('spread'):.2f}; runs median {med('median'):.2f},"
      f" longest {med('longest'):.2f}")
print("the stage's last task, by head:", ', '.join(f"{h} {n}" for h, n in slow_heads.most_common(6)))
print("                     by SM:", ', '.join(f"{s} {n}" for s, n in slow_sms.most_common(6)))
print("     the task before it on its SM:", ', '.join(f"{k} {n}" for k, n in slow_before.most_common(6)))
