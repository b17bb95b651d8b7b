#!/usr/bin/env bash
# The profile adapters on an NVIDIA H200: the six candidates of tests/fixtures/profile/candidates/, each built
# to have one bottleneck, are checked with `kforge eval`, then profiled with `kforge profile --raw`
# under Nsight Compute (--clock-control none) and the torch profiler. Writes, per candidate,
# $OUT/profile-fixtures/<name>/{ncu.raw.csv,ncu.details.csv,torch.json,summary.txt} (copy them to
# tests/fixtures/profile/h200/<name>/ to end the skips of profile_h200_fixtures_test), the ncu
# reports to $OUT/profile-reports/, and logs to $OUT. About 3-6 minutes.
# Set-up as bench/h200_issue2.sh: .carry/bin/kforge and .carry/lib, python3 with torch and CUDA.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT/profile-fixtures" "$OUT/profile-reports"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site KFORGE_RUNNER_PYTHONPATH=/tmp/site
fi
export LD_LIBRARY_PATH=$ROOT/.carry/lib:${LD_LIBRARY_PATH:-}
export PATH=$ROOT/.carry/bin:$PATH:/usr/local/cuda/bin
export KFORGE_HOME=$ROOT KFORGE_PYTHON=$(command -v python3) KFORGE_CACHE_DIR=/tmp/kforge-cache
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  ncu --version | tail -1
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
} 2>&1 | tee "$OUT/profile-environment.txt"
C=tests/fixtures/profile/candidates
# name task
CASES="memory_coalesced:scale_task uncoalesced:scale_task compute_bound:iterate_task
register_pressure:iterate_task launch_bound:add_one_task bank_conflicts:transpose_task"
for case in $CASES; do
  name=${case%%:*}; task=$C/${case#*:}.py; cand=$C/$name.cu; dir=$OUT/profile-fixtures/$name
  mkdir -p "$dir"
  echo "=== $name"
  kforge eval "$task" "$cand" --target nvidia/cuda --no-store 2>&1 | tail -3 | tee "$dir/eval.txt"
  kforge profile "$task" "$cand" --target nvidia/cuda --tool ncu --raw --out "$dir/ncu" \
    > "$OUT/profile-$name-ncu-raw.log" 2> "$OUT/profile-$name-ncu.err"
  echo "ncu exit $?"; tail -5 "$OUT/profile-$name-ncu.err"
  for f in ncu.raw.csv ncu.details.csv; do [ -f "$dir/ncu/$f" ] && cp "$dir/ncu/$f" "$dir/$f"; done
  [ -f "$dir/ncu/ncu.ncu-rep" ] && mv "$dir/ncu/ncu.ncu-rep" "$OUT/profile-reports/$name.ncu-rep"
  kforge profile "$task" "$cand" --target nvidia/cuda --tool torch --calls 3 --raw --out "$dir/torch" \
    > /dev/null 2> "$OUT/profile-$name-torch.err"
  echo "torch exit $?"; tail -3 "$OUT/profile-$name-torch.err"
  [ -f "$dir/torch/torch.json" ] && cp "$dir/torch/torch.json" "$dir/torch.json"
  rm -rf "$dir/ncu" "$dir/torch"
  # The summaries of what was kept (no second profiling run).
  kforge profile --from "$dir" --tool ncu > "$dir/summary.txt" 2>&1
  kforge profile --from "$dir" --tool torch > "$dir/summary-torch.txt" 2>&1
  grep -E '^dominant bottleneck|^- ' "$dir/summary.txt"
done
echo "copy: cp -r $OUT/profile-fixtures/* tests/fixtures/profile/h200/ (drop eval.txt if unwanted)"
