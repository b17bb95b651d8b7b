#!/usr/bin/env bash
# A short tour of `kforge eval` on the CPU: an honest OpenCL kernel (PoCL), a wrong one, a C++
# kernel that segfaults, and the targets this machine has. Run scripts/setup-debian.sh first.
set -uo pipefail
cd "$(dirname "$0")/.."
KFORGE=build/dev/src/cli/kforge
[ -x "$KFORGE" ] || KFORGE=build/ci/src/cli/kforge
FIX=tests/fixtures/candidates
run() { echo; echo "\$ kforge $*"; "$KFORGE" "$@"; echo "(exit code $?)"; }
run targets
run eval kernelbench:level1#23 "$FIX/softmax/honest.cl.py" --target cpu/opencl --set batch_size=16 --set dim=4093
run eval kernelbench:level1#23 "$FIX/softmax/wrong_axis.cl.py" --target cpu/opencl --set batch_size=16 --set dim=4093
run eval kernelbench:level1#19 "$FIX/relu/crash_segfault.cpp" --target cpu/cpp --set batch_size=16 --set dim=1024
