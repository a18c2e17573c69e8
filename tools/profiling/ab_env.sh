# tools/profiling/ab_env.sh: sourced by the scripts that run amk-bench on one build (env-ab.sh,
# decode-variants.sh): ROOT (the checkout), BUILD ($AMK_DEVICE_BUILD, default build-device), LOGS
# ($OUT, else $BUILD/logs; created), and require_bench, which stops the script with exit 2 when
# amk-bench is not built there.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${AMK_DEVICE_BUILD:-$ROOT/build-device}"
LOGS="${OUT:-$BUILD/logs}"
mkdir -p "$LOGS"

require_bench() {
  [ -x "$BUILD/tools/amk-bench" ] || { echo "no $BUILD/tools/amk-bench: build it first" >&2; exit 2; }
}
