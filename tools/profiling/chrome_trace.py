"""tools/profiling/chrome_trace.py: reading a traced launch (`amk-bench decode --trace`, plain or
gzipped Chrome trace JSON) for the scripts beside it. Import it from a script in this folder."""
import gzip
import json
import re

# Slice categories that are not a task's run: launches, the weight ring's chunks, counter waits.
NOT_TASKS = ('launch', 'chunk', 'wait')


def load(path):
    """The trace's JSON object."""
    with (gzip.open(path) if path.endswith('.gz') else open(path)) as f:
        return json.load(f)


def slices(trace):
    """Every complete slice ('X' event) of the trace."""
    return [e for e in trace['traceEvents'] if e.get('ph') == 'X']


def task_runs(trace):
    """The slices of task runs: every complete slice but launches, chunks and waits."""
    return [e for e in slices(trace) if e['cat'] not in NOT_TASKS]


def stage_kind(label):
    """A task label's stage kind, without its layer and tile: 'L3.gate_proj[0:64]' -> 'gate_proj'."""
    return re.sub(r'^L\d+\.', '', re.sub(r'\[.*', '', label))
