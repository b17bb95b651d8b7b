#!/usr/bin/env bash
# Why nvidia/opencl candidates end as infra_error inside KForge's sandbox on the H200: the
# verdict's own diagnostics, then pyopencl's platforms under bubblewrap as root and as user nobody
# (the candidate runner's user). Expects the set-up of bench/h200_timing.sh (PATH, PYTHONPATH).
set -uo pipefail
OUT=${OUT:-$PWD/out}
F=tests/fixtures/candidates/relu/honest.cl.py
echo "== kforge eval nvidia/opencl (diagnostics)"
KFORGE_LOG=info kforge eval kernelbench:level1#19 $F -t nvidia/opencl --set batch_size=16 --set dim=1024 --json --no-store > $OUT/opencl_eval.json 2> $OUT/opencl_eval.err
python3 -c "import json,sys; v=json.load(open('$OUT/opencl_eval.json')); print(v['status'], '|', v['message']); print(v['diagnostics'][:1500]); print(v['isolation'])" 2>&1
V=/tmp/kforge-diag/vendors; mkdir -p $V; i=0
IFS=: read -ra LIBS <<<"${OCL_ICD_FILENAMES:-}"
for l in "${LIBS[@]}"; do echo "$l" > $V/0$i.icd; i=$((i+1)); done
chmod -R a+rX /tmp/kforge-diag /tmp/site
PYL='import pyopencl as cl; print([(p.name, len(p.get_devices())) for p in cl.get_platforms()])'
base=(--ro-bind / / --dev-bind /dev /dev --proc /proc --tmpfs /tmp --tmpfs /dev/shm
      --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag
      --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent)
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
run() { env -i PATH=$PATH PYTHONPATH=/tmp/site OCL_ICD_VENDORS=$V HOME=/tmp "$@" 2>&1 | tail -2; }
echo "-- nobody, no sandbox: $(run $as_nobody python3 -c "$PYL")"
echo "-- nobody, kforge bwrap: $(run $as_nobody bwrap "${base[@]}" -- python3 -c "$PYL")"
echo "-- nobody, bwrap without --unshare-pid: $(run $as_nobody bwrap --ro-bind / / --dev-bind /dev /dev --proc /proc --tmpfs /tmp --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag --unshare-net -- python3 -c "$PYL")"
echo "-- nobody, bwrap with the real /proc: $(run $as_nobody bwrap --ro-bind / / --dev-bind /dev /dev --ro-bind /proc /proc --tmpfs /tmp --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag --unshare-net -- python3 -c "$PYL")"
echo "-- nobody, bwrap minimal: $(run $as_nobody bwrap --ro-bind / / --dev-bind /dev /dev --proc /proc -- python3 -c "$PYL")"
echo "-- nobody + NVIDIA ICD errors:"; run $as_nobody bwrap "${base[@]}" -- python3 -c "
import ctypes
lib = ctypes.CDLL('libnvidia-opencl.so.1')
n = ctypes.c_uint()
f = lib.clIcdGetPlatformIDsKHR
print('clIcdGetPlatformIDsKHR ->', f(0, None, ctypes.byref(n)), 'platforms', n.value)"
ls -la /dev/nvidia* | head
