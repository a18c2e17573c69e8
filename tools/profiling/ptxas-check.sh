#!/usr/bin/env bash
# tools/profiling/ptxas-check.sh [-D...]... : the persistent kernel's register allocation for
# sm_90a, on this machine, without a GPU: configures build-ptxas (Release, -Xptxas=-v) once, then
# compiles vm/cuda/persistent_kernel.cu alone with that directory's exact command and the extra
# flags given (e.g. -DAMK_NO_PREBIND) into an sm_90a cubin, and prints ptxas's lines for the kernel
# and for any function whose name contains $AMK_PTXAS_ALSO (e.g. loader_main), then the kernel's
# code size (its .text section, readelf). AMK_PTXAS_CUBIN=FILE keeps the cubin (for `nvdisasm -g -c
# FILE` on the device and `spills_by_line.py --code`). About 1.5 minutes on an idle 2-core VM (the
# first run also configures).
#
# Why: a change anywhere in the kernel moves ptxas's allocation of all of it, and every build whose
# spill stores grew past main's 60 B has been slower on the GPU (docs/PERFORMANCE.md rows 77, 123,
# 124). Check this before spending device time on a variant. The code size matters too: a task
# that runs once per layer on its SM fetches its instructions cold, and 3.5 -> 1.8 MB of code made
# the tokens 1% faster (row 156).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${AMK_PTXAS_BUILD:-$ROOT/build-ptxas}"
export PATH="/usr/local/cuda/bin:$PATH"
if [ ! -f "$BUILD/compile_commands.json" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DAMK_CUDA=ON -DAMK_CUDA_ARCHITECTURES=90a -DAMK_HIP=OFF \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_FLAGS="-Xptxas=-v -lineinfo" >/dev/null
fi
entry="$(python3 - "$BUILD/compile_commands.json" <<'EOF'
import json, sys
for e in json.load(open(sys.argv[1])):
    if e['file'].endswith('vm/cuda/persistent_kernel.cu'):
        print(e['directory'])
        print(e['command'])
        break
else:
    sys.exit('persistent_kernel.cu is not in ' + sys.argv[1])
EOF
)"
dir="$(sed -n 1p <<<"$entry")"
# The object's command as a cubin of the one real arch (nvcc refuses -cubin for several code
# instances): the same ptxas run, and a file whose sections readelf can size.
cmd="$(sed -n 2p <<<"$entry" | sed -e 's/ -o [^ ]*$//' -e 's/ -c / /' -e 's/--generate-code=[^ ]*//g')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086  # the command line and the extra flags are word lists
(cd "$dir" && eval "$cmd -arch=sm_90a -cubin $* -o $out/pk.cubin") >"$out/ptxas.log" 2>&1 || { cat "$out/ptxas.log"; exit 1; }
grep -B1 -E "Used [0-9]+ registers, used 2 barriers" "$out/ptxas.log" | sed 's/^ptxas info *: //'
if [ -n "${AMK_PTXAS_ALSO:-}" ]; then
  grep -A1 "Function properties for .*${AMK_PTXAS_ALSO}" "$out/ptxas.log" | grep -v "^--"
fi
text_hex="$(readelf -SW "$out/pk.cubin" 2>/dev/null | awk '$2 ~ /^\.text\..*amk_persistent_kernel/ { print $6 }')"
[ -n "$text_hex" ] && echo "code: $((16#$text_hex)) bytes (.text of the persistent kernel and its out-of-line callees)"
if [ -n "${AMK_PTXAS_CUBIN:-}" ]; then cp "$out/pk.cubin" "$AMK_PTXAS_CUBIN"; fi
