#!/usr/bin/env python3
"""tools/profiling/ncu_top.py CSV [N]: the hottest SASS instructions of an Nsight Compute source
page export (ncu --section SourceCounters --page source --csv --print-source sass), with their
stall-sample columns, so a kernel's binding stalls can be read without the GUI. Prints the
columns it found, then the N (default 40) instructions with the most warp-stall samples, each with
the 6 instructions before it (what it waited on is usually just above)."""
import sys

from ncu_csv import SourceTable, num


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    t = SourceTable(path)
    head, body = t.head, t.body
    sample_col, src_col, addr_col = t.sample_col, t.src_col, t.addr_col
    stall_cols = t.stall_cols
    print("columns:", " | ".join(head))

    total = sum(num(r[sample_col]) for r in body) or 1.0
    order = sorted(range(len(body)), key=lambda i: -num(body[i][sample_col]))
    print(f"total samples {total:.0f}")
    for rank, i in enumerate(order[:top]):
        r = body[i]
        reasons = sorted(((num(r[c]), head[c]) for c in stall_cols if num(r[c]) > 0), reverse=True)[:3]
        print(f"#{rank} {num(r[sample_col]) / total * 100:5.1f}%  {r[addr_col]}  {r[src_col]}   "
              + ", ".join(f"{h}={v:.0f}" for v, h in reasons))
        for j in range(max(0, i - 6), i):
            print(f"        {body[j][addr_col]}  {body[j][src_col]}")


if __name__ == "__main__":
    main()
