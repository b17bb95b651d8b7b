#!/usr/bin/env bash
# The harness and the timing protocol on an NVIDIA H200, one device call: calibration, the OpenCL-in-bubblewrap
# diagnosis, the cold timing protocol with the compile baseline, and the evaluation speed runs.
# Same set-up as bench/h200_issue2.sh (.carry/ and .whl/). Knobs: SPEED_N, SPEED_M (0 skips the
# speed runs), DIAG_OPENCL=0 skips the OpenCL diagnosis.
set -uo pipefail
source bench/h200_env.sh
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} 2>&1 | tee "$OUT/environment.txt"

echo "== calibrate"; kforge calibrate --target nvidia/cuda 2>&1 | tee "$OUT/calibrate.txt"

if [ "${DIAG_OPENCL:-1}" = 1 ]; then
  V=/tmp/kforge-diag/vendors; mkdir -p $V; i=0
  IFS=: read -ra LIBS <<<"${OCL_ICD_FILENAMES:-}"
  for l in "${LIBS[@]}"; do echo "$l" > $V/0$i.icd; i=$((i+1)); done
  chmod -R a+rX /tmp/kforge-diag
  PYL='import pyopencl as cl; print([(p.name, len(p.get_devices())) for p in cl.get_platforms()])'
  base=(--ro-bind / / --dev-bind /dev /dev --proc /proc --tmpfs /tmp --tmpfs /dev/shm
        --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag)
  try() {  # try LABEL BWRAP-ARGS...
    local label=$1; shift
    echo "-- $label: $(env -i PATH=$PATH PYTHONPATH=/tmp/site LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} \
      OCL_ICD_VENDORS=$V HOME=/tmp bwrap "$@" -- python3 -c "$PYL" 2>&1 | tail -1)"
  }
  {
    echo "== opencl in bubblewrap (OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-})"
    echo "-- no sandbox: $(env -i PATH=$PATH PYTHONPATH=/tmp/site OCL_ICD_VENDORS=$V python3 -c "$PYL" 2>&1 | tail -1)"
    try minimal --ro-bind / / --dev-bind /dev /dev --proc /proc --ro-bind /tmp/site /tmp/site
    try kforge "${base[@]}" --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent
    try no-ipc "${base[@]}" --unshare-pid --unshare-uts --unshare-net --die-with-parent
    try no-pid "${base[@]}" --unshare-ipc --unshare-uts --unshare-net --die-with-parent
    try no-net "${base[@]}" --unshare-pid --unshare-ipc --unshare-uts --die-with-parent
    try no-shm --ro-bind / / --dev-bind /dev /dev --proc /proc --tmpfs /tmp --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag --unshare-pid --unshare-ipc --unshare-net
    try ro-proc --ro-bind / / --dev-bind /dev /dev --ro-bind /proc /proc --tmpfs /tmp --ro-bind /tmp/site /tmp/site --ro-bind /tmp/kforge-diag /tmp/kforge-diag --unshare-ipc --unshare-net
    echo "-- strace of the kforge variant (opens of nvidia files):"
    if command -v strace >/dev/null; then
      env -i PATH=$PATH PYTHONPATH=/tmp/site OCL_ICD_VENDORS=$V HOME=/tmp strace -f -e trace=openat,ioctl -o /tmp/kforge-diag/st bwrap "${base[@]}" --unshare-pid --unshare-ipc --unshare-uts --unshare-net -- python3 -c "$PYL" >/dev/null 2>&1
      grep -E "nvidia|ENOENT.*(nv|cuda)" /tmp/kforge-diag/st | grep -v "= [0-9]" | head -15
    else echo "no strace"; fi
  } 2>&1 | tee "$OUT/opencl_diag.txt"
fi

echo "== cold protocol + compile baseline, level 1 #19 (ReLU) at 1024 x 4096 and 64 x 4096"
for sizes in "1024 4096" "64 4096"; do
  set -- $sizes
  kforge eval kernelbench:level1#19 tests/fixtures/candidates/relu/honest.cu -t nvidia/cuda \
    --set batch_size=$1 --set dim=$2 --baselines --no-store 2>&1 | tee -a "$OUT/timing_relu.txt"
done
echo "== the same again (compile baseline from the cache)"
kforge eval kernelbench:level1#19 tests/fixtures/candidates/relu/honest.cu -t nvidia/cuda \
  --set batch_size=1024 --set dim=4096 --baselines --json --no-store > "$OUT/timing_relu_cached.json" 2>&1
grep -E '"(median_s|compile_baseline_cached|speedup_vs_[a-z_]+|sol_fraction|held_for_review)"' "$OUT/timing_relu_cached.json" | head -20

if [ "${SPEED_M:-1}" != 0 ]; then
  KFORGE=kforge bench/eval_speed.sh "${SPEED_N:-7}" "${SPEED_M:-1}" 2>&1 | tee "$OUT/eval_speed.txt"
fi
df -h /tmp /dev/shm | tee -a "$OUT/environment.txt"
