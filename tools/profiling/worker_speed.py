#!/usr/bin/env python3
"""tools/profiling/worker_speed.py TRACE.json[.gz] [TRACE2 ...] [--kinds K1,K2]: are some SMs
consistently faster or slower at the same streamed work? For each stage kind (default: every kind
with tiles, e.g. mlp_fold, q_proj, o_proj, lm_head), each task's run is divided by its tile's width
(its label's [a:b]: a fold task's columns, a GEMV tile's rows) and by the median of that quantity
over the same layer's tasks of the kind, so 1.00 is a layer's typical speed and 1.05 a task 5%
slower than it for its size.

Every traced launch (a file may hold several: `amk-bench decode --ctx 128,128 --trace F`) is a
sample. Per sample and kind it prints the spread of the workers' mean ratios (p10 / median / p90 /
max), the count of fast workers (mean ratio under 0.96), whether the ratio belongs to the worker
within the launch (`even~odd`: the correlation of each worker's mean over the even layers with its
mean over the odd ones), and the stage's cost: the median over layers of (slowest task's end -
median task's end), in us. Between samples it prints the correlation of the per-worker means by
worker index and, where the trace has each launch's placement (the task slices' `hw_sm`: CUDA
%smid, LaunchTrace::worker_sm), by hardware SM, and how many workers kept their SM: whether the
speed goes with the SM and whether the placement survives a launch or a process.

A static schedule gives every worker the same bytes, so a stage ends with its slowest worker: if
the fast SMs are the same in every launch, giving their workers more work shortens every streamed
stage (docs/PERFORMANCE.md row 210)."""
import collections
import re
import statistics
import sys

import chrome_trace

TILE = re.compile(r'^L(\d+)\.([A-Za-z_]+)\[(\d+):(\d+)\]')
FAST = 0.96


def pearson(xs, ys):
    if len(xs) < 3:
        return float('nan')
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float('nan')


class Sample:
    """One traced launch: {kind: {worker: {layer: ratio}}}, each kind's tails, worker -> hw SM."""

    def __init__(self, name):
        self.name = name
        self.ratio = collections.defaultdict(lambda: collections.defaultdict(dict))
        self.tails = collections.defaultdict(list)
        self.hw = {}


def samples_of(path, kinds):
    rows = collections.defaultdict(list)  # (step, kind, layer) -> [(worker, us per unit, end)]
    hw = collections.defaultdict(dict)
    for e in chrome_trace.task_runs(chrome_trace.load(path)):
        a = e['args']
        m = TILE.match(a.get('label', ''))
        if not m or (kinds and m.group(2) not in kinds):
            continue
        width = int(m.group(4)) - int(m.group(3))
        if width <= 0 or e['dur'] <= 0:
            continue
        step = a.get('step', 0)
        rows[(step, m.group(2), int(m.group(1)))].append((e['tid'], e['dur'] / width, e['ts'] + e['dur']))
        if 'hw_sm' in a:
            hw[step][e['tid']] = a['hw_sm']
    out = {}
    for (step, kind, layer), rs in rows.items():
        s = out.setdefault(step, Sample(f"{path.rsplit('/', 1)[-1]}:{step}"))
        med = statistics.median(r[1] for r in rs)
        for worker, speed, _ in rs:
            s.ratio[kind][worker][layer] = speed / med
        ends = sorted(r[2] for r in rs)
        s.tails[kind].append(ends[-1] - ends[len(ends) // 2])
    for step, s in out.items():
        s.hw = hw.get(step, {})
    return [out[k] for k in sorted(out)]


def worker_means(s, kind):
    return {w: statistics.fmean(v.values()) for w, v in s.ratio.get(kind, {}).items()}


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
    samples = [s for p in paths for s in samples_of(p, set(kinds))]
    if not samples:
        sys.exit('worker_speed.py: no tiled task runs in the traces')
    if not kinds:  # every kind found, the most tasks first
        kinds = sorted(samples[0].ratio, key=lambda k: -sum(len(v) for v in samples[0].ratio[k].values()))
    print(f"{'kind':10s} {'sample':>14s} {'workers':>7s} {'p10':>6s} {'med':>6s} {'p90':>6s} {'max':>6s} "
          f"{'fast':>4s} {'even~odd':>8s} {'tail us':>7s}")
    for kind in kinds:
        means = []
        for s in samples:
            workers = s.ratio.get(kind, {})
            if not workers:
                continue
            mean = worker_means(s, kind)
            both = [w for w, v in workers.items() if any(l % 2 == 0 for l in v) and any(l % 2 == 1 for l in v)]
            even = [statistics.fmean([r for l, r in workers[w].items() if l % 2 == 0]) for w in both]
            odd = [statistics.fmean([r for l, r in workers[w].items() if l % 2 == 1]) for w in both]
            vals = sorted(mean.values())
            q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]
            fast = sum(1 for v in vals if v < FAST)
            print(f"{kind:10s} {s.name[-14:]:>14s} {len(vals):7d} {q(0.1):6.3f} {q(0.5):6.3f} {q(0.9):6.3f} "
                  f"{vals[-1]:6.3f} {fast:4d} {pearson(even, odd):8.2f} {statistics.median(s.tails[kind]):7.2f}")
            means.append((s, mean))
        for a in range(1, len(means)):
            (s0, m0), (sa, ma) = means[0], means[a]
            ws = sorted(set(m0) & set(ma))
            line = f"{kind:10s} {s0.name} ~ {sa.name}: by worker {pearson([m0[w] for w in ws], [ma[w] for w in ws]):.2f}"
            if s0.hw and sa.hw:
                h0 = {s0.hw[w]: v for w, v in m0.items() if w in s0.hw}
                ha = {sa.hw[w]: v for w, v in ma.items() if w in sa.hw}
                hs = sorted(set(h0) & set(ha))
                kept = sum(1 for w in ws if s0.hw.get(w) is not None and s0.hw.get(w) == sa.hw.get(w))
                line += f", by SM {pearson([h0[h] for h in hs], [ha[h] for h in hs]):.2f}; {kept} of {len(ws)} workers kept their SM"
            print(line)
        if means:
            s0, m0 = means[0]
            tag = lambda w: f"{w}" + (f"(SM {s0.hw[w]})" if w in s0.hw else "")
            fast = sorted((w for w in m0 if m0[w] < FAST), key=lambda w: m0[w])
            print(f"{kind:10s} fast workers of {s0.name}: " + (' '.join(f"{tag(w)}:{m0[w]:.3f}" for w in fast) or '-'))


if __name__ == '__main__':
    main(sys.argv[1:])
