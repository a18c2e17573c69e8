#!/usr/bin/env python3
"""tools/profiling/ncu_by_function.py SASS_CSV DISASM [N]: warp-stall samples of the persistent
kernel per device function and per source line.

SASS_CSV is ncu's source page (--page source --csv --print-source sass, may be .gz); DISASM is
`nvdisasm -gi -c` of the same cubin (may be .gz), which names every instruction's function (its
.text section: each NOINLINE micro-kernel is one) and source line. The two are joined on the
instruction's offset and mnemonic. Prints the match rate, then samples per function with the top
stall reasons, then per source file (innermost line) its share and how much of it waits for the
instruction fetch (`no_inst`: cold code, docs/PERFORMANCE.md row 67), then the N (default 30)
hottest source lines."""
import collections
import gzip
import re
import shutil
import subprocess
import sys

from ncu_csv import SourceTable, num


def open_text(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path, newline="")


def mnemonic(text):
    """The opcode with its modifiers, without a predicate: '@!P0 LDG.E.128 R4, [R2.64] ;' -> LDG.E.128."""
    toks = text.replace(";", " ").split()
    while toks and toks[0].startswith("@"):
        toks = toks[1:]
    return toks[0] if toks else ""


def read_disasm(path):
    """{offset: [(function, mnemonic, innermost 'file:line', outermost 'file:line')]} per instruction."""
    by_offset = collections.defaultdict(list)
    section, inner, outer = "?", "?", "?"
    in_chain = False
    sec_re = re.compile(r"^\s*\.text\.(\S+?):\s*$")
    # A __noinline__ function may share its kernel's .text section (CUDA 12+ puts them there),
    # labelled "$KERNEL$FUNCTION:" where it starts: that label names the function from there on.
    sub_re = re.compile(r"^\$[^$\s]+\$(\S+?):\s*$")
    file_re = re.compile(r'//## File "([^"]+)", line (\d+)(.*)$')
    inl_re = re.compile(r'inlined at "([^"]+)", line (\d+)')
    ins_re = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s+(.*)$")
    with open_text(path) as f:
        for line in f:
            m = sec_re.match(line) or sub_re.match(line)
            if m:
                section, inner, outer = m.group(1), "?", "?"
                continue
            m = file_re.search(line)
            if m:
                # nvdisasm -gi prints the inlining chain one level per line, innermost first: the
                # block's first line is the innermost, its last names the outermost caller.
                here = f"{short(m.group(1))}:{m.group(2)}"
                chain = inl_re.findall(m.group(3))
                if not in_chain:
                    inner = here
                outer = f"{short(chain[-1][0])}:{chain[-1][1]}" if chain else here
                in_chain = True
                continue
            in_chain = False
            m = ins_re.search(line)
            if m:
                by_offset[int(m.group(1), 16)].append((section, mnemonic(m.group(2)), inner, outer))
    return by_offset


def short(path):
    """Repository-relative path (the build embeds absolute ones)."""
    for root in ("instructions/", "vm/", "targets/", "include/"):
        i = path.rfind("/" + root)
        if i >= 0:
            return path[i + 1:]
    return path.rsplit("/", 1)[-1]


def demangle(names):
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    if len(out) != len(names):
        return {n: n for n in names}
    # Keep the qualified name without parameters: 'amk::instructions::rope_run(...)' -> rope_run
    return {n: re.sub(r"\(.*$", "", d).split("::")[-1] or d for n, d in zip(names, out)}


def main():
    csv_path, dis_path = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    t = SourceTable(csv_path)
    head, body, sample_col, src_col, addr_col, exec_col = t.head, t.body, t.sample_col, t.src_col, t.addr_col, t.exec_col
    stall_cols = t.stall_cols

    dis = read_disasm(dis_path)
    addrs = [int(r[addr_col], 16) for r in body]
    base = 0
    if addrs and not any(a in dis for a in addrs[:50]):
        base = min(addrs)  # absolute addresses: make them offsets from the function's start
    total = sum(num(r[sample_col]) for r in body) or 1.0
    # The code a launch runs at all (16 B per SASS instruction executed at least once, exec_col):
    # what has to fit the SM's instruction caches for a once-per-layer task not to start cold (row 203).
    per_fn = collections.defaultdict(lambda: collections.Counter())
    per_line = collections.defaultdict(lambda: collections.Counter())
    per_file = collections.defaultdict(lambda: collections.Counter())
    matched = 0.0
    prev_fn = None
    for r, a in zip(body, addrs):
        s = num(r[sample_col])
        cands = [c for c in dis.get(a - base, []) if c[1] == mnemonic(r[src_col])]
        if not cands:
            fn, inner, outer = "(unmatched)", "?", "?"
        else:
            pick = next((c for c in cands if c[0] == prev_fn), cands[0])
            fn, _, inner, outer = pick
            prev_fn = fn
            matched += s
        ran = exec_col is not None and num(r[exec_col]) > 0
        for key, table in ((fn, per_fn), ((fn, inner, outer), per_line), (inner.split(":")[0], per_file)):
            table[key]["samples"] += s
            table[key]["code_run"] += 16 if ran else 0
            for c in stall_cols:
                table[key][head[c]] += num(r[c])
    names = demangle([k for k in per_fn if k != "(unmatched)"])
    names["(unmatched)"] = "(unmatched)"

    def reasons(counter, k=3):
        items = sorted(((v, h) for h, v in counter.items() if h.startswith("stall_") and v > 0), reverse=True)[:k]
        return ", ".join(f"{h.replace('stall_', '')} {v / max(counter['samples'], 1) * 100:.0f}%" for v, h in items)

    print(f"total samples {total:.0f}, joined to a function {matched / total * 100:.1f}%"
          f"{' (addresses rebased)' if base else ''}")
    if exec_col is not None:
        print(f"code executed at least once: {sum(c['code_run'] for c in per_fn.values()) / 1024:.1f} KiB")
    print("\n== per function: share of all samples, samples, no_inst share of its samples, KiB of its code"
          " executed, top stall reasons")
    for fn, c in sorted(per_fn.items(), key=lambda kv: -kv[1]["samples"]):
        if c["samples"] / total < 0.002:
            continue
        code = f"{c['code_run'] / 1024:6.1f}K" if exec_col is not None else "      -"  # no counts: not 0 KiB
        print(f"{c['samples'] / total * 100:5.1f}% {c['samples']:8.0f}  no_inst {c['stall_no_inst'] / max(c['samples'], 1) * 100:5.1f}%"
              f"  {code}  {names.get(fn, fn)[:48]:48s}  {reasons(c)}")
    print("\n== per source file (innermost line): share of all samples, no_inst share of its samples, top reasons")
    for f, c in sorted(per_file.items(), key=lambda kv: -kv[1]["samples"]):
        if c["samples"] < 5:  # the small stages matter even at a tiny share of all samples
            continue
        print(f"{c['samples'] / total * 100:5.1f}%  no_inst {c['stall_no_inst'] / max(c['samples'], 1) * 100:5.1f}%"
              f"  {f[:48]:48s} {reasons(c, 2)}")
    print(f"\n== hottest {top} source lines (innermost line / outermost caller line in that function)")
    for (fn, inner, outer), c in sorted(per_line.items(), key=lambda kv: -kv[1]["samples"])[:top]:
        print(f"{c['samples'] / total * 100:5.1f}%  {names.get(fn, fn)[:28]:28s} {inner:34s} {outer:34s} {reasons(c, 2)}")


if __name__ == "__main__":
    main()
