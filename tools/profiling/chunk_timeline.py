#!/usr/bin/env python3
"""tools/profiling/chunk_timeline.py TRACE.json[.gz] [LABEL...]: where a streamed task's time goes,
chunk by chunk, from a traced launch's weight-stream records (amk-bench decode --profile --trace on
sm_90 with the ring on; docs/TRACING.md). Per stage kind (gate_proj, down_proj, ...), medians over
all its chunks and tasks:

  run      the task's run slice (us)           chunks  chunks per task
  head     run begin -> first chunk's wait: x staging and plan setup
  tail     last chunk consumed -> run end: the last outputs and the barrier
  wait     a chunk's t_ready - t_wait: the arithmetic stood still for HBM
  math     a chunk's t_done - t_ready: its arithmetic
  first    math of the task's first chunk alone (it runs the task's code cold: docs/PERFORMANCE.md row 202)
  later    math of the task's other chunks
  lat      t_ready - t_issue: issue to seen-landed (an upper bound on the copy's latency)
  refill   issue of chunk n + slots - done of chunk n: the loader's reaction to a freed slot
  GB/s     the task's weight bytes / its run time (one SM)
  wait%    all its chunks' waits / all its runs: the share of the stage spent waiting for HBM

With labels, only those kinds."""
import collections
import statistics
import sys

import chrome_trace


def med(xs):
    return statistics.median(xs) if xs else float('nan')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    d = chrome_trace.load(path)
    want = set(sys.argv[2:])
    slots = d.get('otherData', {}).get('ring_slots', 0)
    runs = {}  # (step, task) -> run slice
    chunks = collections.defaultdict(list)  # (step, task) -> chunk slices
    by_track = collections.defaultdict(dict)  # (step, tid) -> n -> chunk slice
    for e in d['traceEvents']:
        if e.get('ph') != 'X':
            continue
        a = e.get('args', {})
        if e['cat'] == 'chunk':
            chunks[(a['step'], a['task'])].append(e)
            by_track[(a['step'], e['tid'])][a['n']] = e
        elif e['cat'] not in ('wait', 'launch'):
            runs[(a['step'], a['task'])] = e
    if not chunks:
        sys.exit(f"{path}: no weight-stream chunks (the ring was off, or not an sm_90 trace)")

    # The loader's refill delay, credited to the kind of the chunk whose slot was freed.
    refill = collections.defaultdict(list)
    for track in by_track.values():
        for n, c in track.items():
            nxt = track.get(n + slots) if slots > 0 else None
            if nxt is not None:
                refill[chrome_trace.stage_kind(c['args']['label'])].append(nxt['args']['issue'] - (c['ts'] + c['dur']))

    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for key, cs in chunks.items():
        run = runs.get(key)
        if run is None:
            continue
        k = chrome_trace.stage_kind(run['args']['label'])
        if want and k not in want:
            continue
        cs.sort(key=lambda c: c['args']['n'])
        r = rows[k]
        r['run'].append(run['dur'])
        r['chunks'].append(len(cs))
        r['head'].append(cs[0]['ts'] - cs[0]['args']['wait_us'] - run['ts'])
        r['tail'].append(run['ts'] + run['dur'] - (cs[-1]['ts'] + cs[-1]['dur']))
        r['gbs'].append(sum(c['args']['bytes'] for c in cs) / (run['dur'] * 1e3) if run['dur'] > 0 else 0)
        for i, c in enumerate(cs):
            r['wait'].append(c['args']['wait_us'])
            r['math'].append(c['dur'])
            r['first' if i == 0 else 'later'].append(c['dur'])
            r['lat'].append(c['args']['issue_to_ready_us'])
            r['kib'].append(c['args']['bytes'] / 1024)

    print(f"ring slots {slots}; medians in us (per task: run, head, tail, GB/s; per chunk: the rest)")
    print(f"{'kind':16s} {'tasks':>5s} {'chunks':>6s} {'KiB':>5s} {'run':>6s} {'head':>5s} {'tail':>5s} "
          f"{'wait':>5s} {'math':>5s} {'first':>5s} {'later':>5s} {'lat':>5s} {'refill':>6s} {'GB/s':>5s} {'wait%':>5s}")
    for k, r in sorted(rows.items(), key=lambda kv: -sum(kv[1]['run'])):
        print(f"{k:16s} {len(r['run']):5d} {med(r['chunks']):6.0f} {med(r['kib']):5.0f} {med(r['run']):6.2f} "
              f"{med(r['head']):5.2f} {med(r['tail']):5.2f} {med(r['wait']):5.2f} {med(r['math']):5.2f} "
              f"{med(r['first']):5.2f} {med(r['later']):5.2f} "
              f"{med(r['lat']):5.2f} {med(refill.get(k, [])):6.2f} {med(r['gbs']):5.1f} "
              f"{100 * sum(r['wait']) / max(sum(r['run']), 1e-9):5.1f}")


if __name__ == '__main__':
    main()
