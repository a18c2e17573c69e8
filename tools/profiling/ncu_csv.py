"""tools/profiling/ncu_csv.py: reading an Nsight Compute source-page export (ncu --page source
--csv --print-source sass), plain or gzipped, for ncu_top.py and ncu_by_function.py."""
import csv
import gzip


def num(v):
    """A counter cell as a float ("1,234" -> 1234.0; "-" and blanks -> 0)."""
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


class SourceTable:
    """The table's header and rows, and the columns the scripts use: the address, the SASS text,
    the all-samples stall count, the per-reason stall columns (stall_*) and the execution count."""

    def __init__(self, path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(l for l in f if l.startswith('"')))  # skip ncu's ==PROF== chatter
        # The export starts with kernel-name rows; the table's header is the row naming "Source".
        start = next(i for i, r in enumerate(rows) if "Source" in r)
        self.head = rows[start]
        self.body = [r for r in rows[start + 1:] if len(r) == len(self.head)]
        self.sample_col = next((i for i, h in enumerate(self.head) if h.startswith("Warp Stall Sampling (All")),
                               None)
        if self.sample_col is None:
            self.sample_col = next(i for i, h in enumerate(self.head) if "Sampl" in h)
        self.src_col = self.head.index("Source")
        self.addr_col = self.head.index("Address") if "Address" in self.head else 0
        self.stall_cols = [i for i, h in enumerate(self.head) if h.startswith("stall_")]
        # Per-instruction execution counts (SourceCounters); None in an export without them.
        self.exec_col = self.head.index("Instructions Executed") if "Instructions Executed" in self.head else None
