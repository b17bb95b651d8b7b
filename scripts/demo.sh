#!/usr/bin/env bash
# The demo: `kforge demo` replays recorded LLM conversations through the real harness on the CPU
# (cpu/opencl on PoCL): a correct kernel, optimization passes driven by the analysis agent's
# advice and a faster final kernel; then a kernel that does not compile and its fix.
# Then (TOUR=1) a short tour of `kforge eval`. Run scripts/setup-debian.sh first.
set -uo pipefail
cd "$(dirname "$0")/.."
KFORGE=build/dev/src/cli/kforge
[ -x "$KFORGE" ] || KFORGE=build/ci/src/cli/kforge
run() { echo; echo "\$ kforge $*"; "$KFORGE" "$@"; echo "(exit code $?)"; }
run demo
run demo --manifest examples/demo/repair.toml
[ "${TOUR:-0}" = 1 ] || exit 0
FIX=tests/fixtures/candidates
run targets
run eval kernelbench:level1#23 "$FIX/softmax/honest.cl.py" --target cpu/opencl --set batch_size=16 --set dim=4093
run eval kernelbench:level1#23 "$FIX/softmax/wrong_axis.cl.py" --target cpu/opencl --set batch_size=16 --set dim=4093
run eval kernelbench:level1#19 "$FIX/relu/crash_segfault.cpp" --target cpu/cpp --set batch_size=16 --set dim=1024
