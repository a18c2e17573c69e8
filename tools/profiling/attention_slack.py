#!/usr/bin/env python3
"""tools/profiling/attention_slack.py TRACE[.gz] [FIRST_LAYER LAST_LAYER]: what per-head counters
for the attention stage would gain, from a Llama decode trace (`amk-bench decode --trace`).

Every attention task now waits for the whole q / k / v stage (one counter per stage). It reads
only its heads' q rows and its KV group's k / v rows, so with a counter per q / k / v tile it could
start once those few tiles are done. Per layer this prints the q / k / v stage's last end, the
attention tasks' median slack (their own producers' last end before the stage's), and the
attention stage's end moved earlier by each task's slack, capped by when its SM was free (the
previous task on the same worker). The difference of the stage ends is the gain per layer, an
upper bound: it ignores the extra counter polls and fences.

head_dim and the GQA group come from the task labels' spans: q_proj[a:b] and k_proj[a:b] are rows,
attention[hA:B...] heads, so head_dim = q rows / heads and group = q rows / k rows.
"""
import collections
import re
import statistics
import sys

import chrome_trace

if len(sys.argv) not in (2, 4):
    sys.exit(__doc__)
path = sys.argv[1]
first, last = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) == 4 else (2, 13)
tasks = chrome_trace.task_runs(chrome_trace.load(path))
by_worker = collections.defaultdict(list)
for e in tasks:
    by_worker[e['tid']].append(e)
prev_end = {}  # id(task) -> end of the previous task on its worker
for evs in by_worker.values():
    evs.sort(key=lambda e: e['ts'])
    for a, b in zip(evs, evs[1:]):
        prev_end[id(b)] = a['ts'] + a['dur']

span = re.compile(r'^L(\d+)\.(\w+)\[h?(\d+):(\d+)')
layers = collections.defaultdict(lambda: collections.defaultdict(list))
for e in tasks:
    m = span.match(e['name'])
    if m:
        layers[int(m.group(1))][m.group(2)].append((int(m.group(3)), int(m.group(4)), e))


def extent(kind):
    """One past the last row (head) that any layer's `kind` tasks cover."""
    return max((b for L in layers.values() for _, b, _ in L.get(kind, [])), default=0)


heads, q_rows, k_rows = extent('attention'), extent('q_proj'), extent('k_proj')
if not heads or not q_rows or not k_rows or q_rows % heads or q_rows % k_rows:
    sys.exit(f'{path}: no attention / q_proj / k_proj task spans to read head_dim and the GQA group from')
head_dim, group = q_rows // heads, q_rows // k_rows
print(f'head_dim {head_dim}, {group} q heads per KV head')
print('layer  qkv end  attn end  attn end (own producers)  gain (us)  median slack')
gains = []
for layer in range(first, last + 1):
    L = layers.get(layer)
    if not L or not L.get('attention'):
        continue
    ends = {k: [(a, b, e['ts'] + e['dur']) for a, b, e in L.get(k, [])] for k in ('q_proj', 'k_proj', 'v_proj')}
    qkv_end = max(end for v in ends.values() for _, _, end in v)

    def own_end(kind, lo, hi):
        return max((end for a, b, end in ends[kind] if a < hi and b > lo), default=qkv_end)

    att_end, moved_end, slacks = 0.0, 0.0, []
    for h0, h1, e in L['attention']:
        g0, g1 = h0 // group, (h1 - 1) // group + 1
        own = max(own_end('q_proj', h0 * head_dim, h1 * head_dim), own_end('k_proj', g0 * head_dim, g1 * head_dim),
                  own_end('v_proj', g0 * head_dim, g1 * head_dim))
        slack = qkv_end - own
        shift = max(0.0, min(slack, e['ts'] - prev_end.get(id(e), 0.0)))  # no earlier than its SM was free
        slacks.append(slack)
        att_end = max(att_end, e['ts'] + e['dur'])
        moved_end = max(moved_end, e['ts'] + e['dur'] - shift)
    gains.append(att_end - moved_end)
    print(f'{layer:5d}  {qkv_end:8.1f}  {att_end:8.1f}  {moved_end:24.1f}  {att_end - moved_end:9.2f}  '
          f'{statistics.median(slacks):12.2f}')
if gains:
    print(f'median gain per layer {statistics.median(gains):.2f} us over {len(gains)} layers')
