#!/usr/bin/env python3
"""tools/profiling/stage_hops.py TRACE[.gz] [FIRST_LAYER LAST_LAYER]: where a stage hand-off's
time goes, per stage kind of a Llama decode trace (`amk-bench decode --trace`).

For each stage of layers FIRST..LAST (default 2..13) the producer stage's last task end stands for
the moment the counter is met (the end is stamped just before the task's release). Each task of
the stage then splits its hop into
  publish - met: the loader saw the counter met and published the task;
  run - publish: the compute warps picked it up.
The publish time is only in traces of a build configured with -DCMAKE_CUDA_FLAGS=-DAMK_TRACE_PUBLISH
(the loader then stamps it into t_wait_begin, the "wait" slice's start, instead of its first poll);
on other builds the first two columns mean "first poll" and are printed only for the record.
Adding -DAMK_TRACE_RELEASE stamps each task's end after its release fence instead of before it,
so "met" becomes the release and a task's run includes the fence (docs/PERFORMANCE.md row 90).
With -DAMK_TRACE_POLL_ISSUE instead of -DAMK_TRACE_PUBLISH (not both: each stamps t_wait_begin),
"publish" is when the loader's poll that saw the counters met went out (docs/PERFORMANCE.md row
153): publish - met is then how long after the release that poll was issued, run - publish its
round trip, the acquire fence, the publish and the wake-up.
docs/PERFORMANCE.md row 89 is the measurement this was written for.
"""
import collections
import statistics
import sys

import chrome_trace

if len(sys.argv) not in (2, 4):
    sys.exit(__doc__)
path = sys.argv[1]
first, last = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) == 4 else (2, 13)
runs = collections.defaultdict(list)  # "L12.o_proj" -> its task slices
waits = {}                            # task index -> its wait slice
for e in chrome_trace.slices(chrome_trace.load(path)):
    if e['cat'] in ('launch', 'chunk'):
        continue
    if e['cat'] == 'wait':
        waits[e['args']['task']] = e
    else:
        runs[e['name'].split('[')[0].split(' ')[0]].append(e)

# Each stage's producers within a Llama layer; q / k / v wait on the previous layer's down.
PRODUCERS = {'attention': ['q_proj', 'k_proj', 'v_proj'], 'o_proj': ['attention'], 'up_proj': ['o_proj'],
             'gate_proj': ['o_proj'], 'down_proj': ['up_proj', 'gate_proj'], 'q_proj': None}

hops = collections.defaultdict(lambda: ([], [], []))
for layer in range(first, last + 1):
    for stage, producers in PRODUCERS.items():
        if producers is None:
            ends = [e['ts'] + e['dur'] for e in runs.get(f'L{layer - 1}.down_proj', [])]
        else:
            ends = [e['ts'] + e['dur'] for p in producers for e in runs.get(f'L{layer}.{p}', [])]
        if not ends:
            continue
        met = max(ends)
        seen, picked, total = hops[stage]
        for e in runs.get(f'L{layer}.{stage}', []):
            w = waits.get(e['args'].get('task'))
            if w is None:
                continue
            seen.append(w['ts'] - met)
            picked.append(e['ts'] - w['ts'])
            total.append(e['ts'] - met)

if not hops:
    sys.exit(f'{path}: no Llama layer stages L{first}..L{last} in this trace')


def summary(v):
    return f"med {statistics.median(v):5.2f} p90 {sorted(v)[int(len(v) * 0.9)]:5.2f} max {max(v):5.2f}"


print(f"us after the producer stage's last task end (layers {first}-{last})")
for stage, (seen, picked, total) in hops.items():
    print(f"{stage:10s} n={len(seen):4d}  publish-met: {summary(seen)} | run-publish: {summary(picked)} | "
          f"run-met: {summary(total)}")
