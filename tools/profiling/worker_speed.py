#!/usr/bin/env python3
"""tools/profiling/worker_speed.py TRACE.json[.gz] [TRACE2 ...] [--kinds K1,K2]: are some workers
(SMs) consistently slower at the same streamed work? For each stage kind (default: every kind
with tiles, e.g. mlp_fold, q_proj, o_proj, lm_head), each task's run is divided by its tile's width (its label's [a:b]: a fold task's
columns, a GEMV tile's rows) and by the median of that quantity over the same layer's tasks of
the kind, so 1.00 is a layer's typical speed and 1.05 a task 5% slower than it for its size.

Per kind it prints the spread of each worker's mean ratio (p10 / median / p90 / max), and whether
that ratio is a property of the worker: the correlation of each worker's mean over the even
layers with its mean over the odd ones (near 0: noise that moves from layer to layer; near 1: the
same workers are slow in every layer). With two or more traces (two launches), also the
correlation between the traces' per-worker means: whether a worker's speed survives a new launch
(blocks are placed on SMs afresh). Then the stage's cost of it: the median over layers of
(slowest task's end - median task's end), in us.

A static schedule gives every worker the same bytes, so a stage ends with its slowest worker; if
the slow workers are the same in every layer and launch, giving them less work would shorten
every streamed stage (docs/PERFORMANCE.md row 210)."""
import collections
import re
import statistics
import sys

import chrome_trace

TILE = re.compile(r'^L(\d+)\.([A-Za-z_]+)\[(\d+):(\d+)\]')


def pearson(xs, ys):
    if len(xs) < 3:
        return float('nan')
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float('nan')


def worker_ratios(path, kinds):
    """{kind: {worker: {layer: ratio}}} and {kind: [slowest end - median end per layer]}."""
    per = collections.defaultdict(lambda: collections.defaultdict(dict))
    tails = collections.defaultdict(list)
    by_layer = collections.defaultdict(list)  # (kind, layer) -> [(worker, us per unit, end)]
    for e in chrome_trace.task_runs(chrome_trace.load(path)):
        m = TILE.match(e['args'].get('label', ''))
        if not m or (kinds and m.group(2) not in kinds):
            continue
        width = int(m.group(4)) - int(m.group(3))
        if width <= 0 or e['dur'] <= 0:
            continue
        by_layer[(m.group(2), int(m.group(1)))].append((e['tid'], e['dur'] / width, e['ts'] + e['dur']))
    for (kind, layer), rows in by_layer.items():
        med = statistics.median(r[1] for r in rows)
        for worker, speed, _ in rows:
            per[kind][worker][layer] = speed / med
        ends = sorted(r[2] for r in rows)
        tails[kind].append(ends[-1] - ends[len(ends) // 2])
    return per, tails


def main(argv):
    kinds = []
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] == '--kinds' and i + 1 < len(argv):
            kinds = argv[i + 1].split(',')
            i += 2
            continue
        paths.append(argv[i])
        i += 1
    if not paths:
        sys.exit(__doc__)
    runs = [worker_ratios(p, set(kinds)) for p in paths]
    if not kinds:  # every kind found, the largest first
        kinds = sorted(runs[0][0], key=lambda k: -len(runs[0][0][k]))
    print(f"{'kind':10s} {'trace':>5s} {'workers':>7s} {'p10':>6s} {'med':>6s} {'p90':>6s} {'max':>6s} "
          f"{'even~odd':>8s} {'tail us':>7s}")
    for kind in kinds:
        means = []
        for t, (per, tails) in enumerate(runs):
            workers = per.get(kind, {})
            if not workers:
                continue
            mean = {w: statistics.fmean(v.values()) for w, v in workers.items()}
            even = {w: statistics.fmean([r for l, r in v.items() if l % 2 == 0]) for w, v in workers.items()
                    if any(l % 2 == 0 for l in v) and any(l % 2 == 1 for l in v)}
            odd = {w: statistics.fmean([r for l, r in v.items() if l % 2 == 1]) for w in even for v in [workers[w]]}
            ws = sorted(even)
            r = pearson([even[w] for w in ws], [odd[w] for w in ws])
            vals = sorted(mean.values())
            q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]
            print(f"{kind:10s} {t:5d} {len(vals):7d} {q(0.1):6.3f} {q(0.5):6.3f} {q(0.9):6.3f} {vals[-1]:6.3f} "
                  f"{r:8.2f} {statistics.median(tails[kind]):7.2f}")
            means.append(mean)
        for a in range(1, len(means)):
            ws = sorted(set(means[0]) & set(means[a]))
            print(f"{kind:10s} traces 0 ~ {a}: per-worker correlation {pearson([means[0][w] for w in ws], [means[a][w] for w in ws]):.2f}"
                  f" over {len(ws)} workers")
        if means:
            slow = sorted(means[0], key=lambda w: -means[0][w])[:8]
            print(f"{kind:10s} slowest workers (trace 0): " + ' '.join(f"{w}:{means[0][w]:.3f}" for w in slow))


if __name__ == '__main__':
    main(sys.argv[1:])
