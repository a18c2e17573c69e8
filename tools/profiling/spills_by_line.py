#!/usr/bin/env python3
"""tools/profiling/spills_by_line.py DISASM.txt [FUNCTION_SUBSTRING] [N] [--code]: where a kernel's local-memory
traffic (register spills: LDL / STL) sits in the source, from `nvdisasm -g[i] -c KERNEL.cubin` (the
build's -lineinfo gives the `//## File "...", line N` comments; tools/profiling/ncu-megakernel.sh
leaves it in $OUT/disasm.txt.gz). Prints the N (default 25) source lines with the most LDL / STL
instructions in functions whose name contains FUNCTION_SUBSTRING (default: amk_persistent_kernel),
with each line's instruction count, so a spill inside the chunk loop stands out from one in a cold
path. Static counts: how often each runs is ncu's business (tools/profiling/ncu-megakernel.sh).
With --code: where the code itself is, the N source lines with the most instructions and the
instructions per file, in each function (the kernel and each out-of-line callee, `$kernel$callee:`
in the listing) whose name contains FUNCTION_SUBSTRING (docs/PERFORMANCE.md row 156: 70% of the
kernel was one unrolled helper that no lowered program runs)."""
import collections
import gzip
import re
import sys

args = [a for a in sys.argv[1:] if a != '--code']
code_mode = len(args) != len(sys.argv) - 1
if not args:
    sys.exit(__doc__)
path = args[0]
want = args[1] if len(args) > 1 else 'amk_persistent_kernel'
top = int(args[2]) if len(args) > 2 else 25
# A section (.text.KERNEL:) or a function inside it: the kernel's own label and each out-of-line
# callee's ($KERNEL$CALLEE:).
func_re = re.compile(r'^\s*(?:\.text\.)?(\$?_Z\S+|\$__internal\S+):\s*$')
per_func = collections.defaultdict(collections.Counter)
line_re = re.compile(r'//## File "([^"]+)", line (\d+)')
insn_re = re.compile(r'/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)')
spills = collections.Counter()
insns = collections.Counter()
kinds = collections.Counter()
func, where, in_chain = None, ('?', 0), False
for text in (gzip.open(path, 'rt', errors='replace') if path.endswith('.gz') else open(path, errors='replace')):
    m = func_re.match(text)
    if m:
        func = m.group(1)
        continue
    m = line_re.search(text)
    if m:  # nvdisasm -gi: the inlining chain, innermost first; keep the first line of each block
        if not in_chain:
            where = (m.group(1).split('/')[-1], int(m.group(2)))
        in_chain = True
        continue
    in_chain = False
    if func is None or want not in func:
        continue
    m = insn_re.search(text)
    if not m:
        continue
    op = m.group(1).split('.')[0]
    if op == 'NOP':  # alignment padding
        continue
    insns[where] += 1
    per_func[func][where] += 1
    if op in ('LDL', 'STL'):
        spills[where] += 1
        kinds[op] += 1
if code_mode:
    for f, lines in sorted(per_func.items(), key=lambda kv: -sum(kv[1].values())):
        files = collections.Counter()
        for (fl, _), n in lines.items():
            files[fl] += n
        print(f"== {f}: {sum(lines.values())} instructions; by file: "
              + ", ".join(f"{fl} {n}" for fl, n in files.most_common(6)))
        for (fl, ln), n in lines.most_common(top):
            print(f"{n:7d}  {fl}:{ln}")
    sys.exit(0)
print(f"{want}: {sum(insns.values())} instructions, LDL {kinds['LDL']}, STL {kinds['STL']}")
for (f, ln), n in spills.most_common(top):
    print(f"{n:5d} LDL/STL of {insns[(f, ln)]:6d} instructions  {f}:{ln}")
