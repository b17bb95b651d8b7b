#!/usr/bin/env bash
# The judge outside the candidate's process (issues 15, 16, 18) on an NVIDIA H200, in one device
# call of about 8 minutes. Needs, besides bench/h200_env.sh's set-up (.carry/ with libraries, bwrap
# and the KernelBench JSONL; .whl/ with the wheels):
#   .carry/bin/kforge                 this tree (native candidates in kforge-harness)
#   .carry/bin/kforge-harness-cuda    this tree's harness/ (CMake builds it where nvcc is)
#   .carry/bin/kforge-harness-cpu
#   .carry/bin/fixtures_gpu_test      this tree's tests/eval
#   .carry/bin/kforge-before          (optional) a kforge built from main before the harness: the
#                                     old path, compared in the same run; without it the new
#                                     binary's KFORGE_NATIVE_HARNESS=0 path stands in for it
# What it shows (a table per step, then a summary):
#   A. evaluation wall time before/after on nvidia-h200/cuda: ReLU and a GEMM, fresh compile and
#      cache hit, timed (--time);
#   B. the cold protocol's agreement with Nsight Compute (--device-time-check) from 3 us to 256 us
#      and a GEMM (target: within 3 % from 17 us up);
#   C. a decode-size evaluation with cached baselines (target: <= 5 s);
#   D. evaluations per GPU-hour over a row of small tasks (target: >= 1000);
#   E. the .cu red-team fixtures (fixtures_gpu_test, where = "h200").
# Everything goes to $OUT (summary.txt last). Knobs: REPEATS (A, default 2), SKIP (steps to skip,
# e.g. "E").
set -uo pipefail
source bench/h200_env.sh
export KFORGE_HARNESS_DIR=$ROOT/.carry/bin
REPEATS=${REPEATS:-2}
SKIP=${SKIP:-}
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
log() { echo "$*" | tee -a "$SUMMARY"; }
now() { date +%s.%N; }
KF=kforge
BEFORE=$ROOT/.carry/bin/kforge-before
# The tasks (KernelBench level 1) and their sizes as `--set` overrides.
declare -A TASK=([relu]="kernelbench:level1#19" [softmax]="kernelbench:level1#23"
  [sum_dim]="kernelbench:level1#47" [matmul]="kernelbench:level1#2" [rmsnorm]="kernelbench:level1#36")
declare -A SIZE=([relu]="--set batch_size=1024 --set dim=4096"
  [softmax]="--set batch_size=16 --set dim=4093"
  [sum_dim]="--set batch_size=8 --set dim1=512 --set dim2=255"
  [matmul]="--set M=1024 --set K=1024 --set N=1024"
  [rmsnorm]="--set batch_size=4 --set features=64 --set dim1=16 --set dim2=17")
RELU=tests/fixtures/candidates/relu/honest.cu
GEMM=tests/fixtures/candidates/matmul/honest.cu

# One evaluation's wall time and verdict fields: "<wall_s> <status> <median_s> <steps>".
eval_row() {  # eval_row BINARY ENV TASK CANDIDATE ARGS...
  local bin=$1 envs=$2 task=$3 cand=$4
  shift 4
  local t0 t1
  t0=$(now)
  env $envs timeout 120 "$bin" eval "${TASK[$task]}" "$cand" --target nvidia-h200/cuda --json \
    --no-store "$@" > "$OUT/last.json" 2>> "$OUT/eval.err"
  t1=$(now)
  python3 - "$OUT/last.json" "$t0" "$t1" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
    v = v[0] if isinstance(v, list) else v
except Exception as e:
    print(f"{float(sys.argv[3]) - float(sys.argv[2]):.2f} unreadable - -"); sys.exit()
t = (v.get("timing") or {}).get("candidate") or {}
steps = {k: round(s, 2) for k, s in v["seconds"]["steps"]["orchestrator"].items()} if isinstance(v["seconds"]["steps"]["orchestrator"], dict) else v["seconds"]["steps"]["orchestrator"]
med = t.get("median_s")
d = v.get("device_time_check") or {}
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.2f} {v['status']} "
      f"{med if med is not None else '-'} {t.get('samples', '-')} {t.get('stopped_by', '-')} "
      f"{t.get('checked_samples', '-')} {t.get('parent_median_s', '-')} "
      f"{d.get('outcome', '-')} {d.get('device_s', '-')}")
PY
}

{
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
grep -i RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null
command -v ncu || ls /usr/local/cuda/bin/ncu
"$KF" --version 2>/dev/null | head -1
ls -la .carry/bin/ | grep -E "kforge|harness|fixtures"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | tee -a "$SUMMARY"

if [[ "$SKIP" != *A* ]]; then
  log "== A. evaluation wall time, before (old path) and after (harness), nvidia-h200/cuda, --time"
  log "variant task cache wall_s status median_s samples stopped_by checked parent_s"
  for task_cand in "relu:$RELU" "matmul:$GEMM"; do
    task=${task_cand%%:*}; cand=${task_cand#*:}
    for variant in after before; do
      if [ "$variant" = before ]; then
        if [ -x "$BEFORE" ]; then bin=$BEFORE; envs="X=1"; else bin=$KF; envs="KFORGE_NATIVE_HARNESS=0"; fi
      else
        bin=$KF; envs="X=1"
      fi
      for r in $(seq "$REPEATS"); do
        cache=/tmp/kforge-judge-cache-$variant-$task-$r
        rm -rf "$cache"
        row=$(eval_row "$bin" "$envs KFORGE_CACHE_DIR=$cache" "$task" "$cand" --time ${SIZE[$task]})
        log "$variant $task fresh $row"
        row=$(eval_row "$bin" "$envs KFORGE_CACHE_DIR=$cache" "$task" "$cand" --time ${SIZE[$task]})
        log "$variant $task hit $row"
      done
    done
  done
fi

if [[ "$SKIP" != *B* ]]; then
  log "== B. cold protocol vs Nsight Compute (--device-time-check; agree = within 3 % or 0.5 us)"
  log "kernel wall_s status median_s samples stopped_by checked parent_s check ncu_s"
  for size in "64 4096" "1024 4096" "8192 8192"; do
    set -- $size
    row=$(eval_row "$KF" "X=1" relu "$RELU" --time --device-time-check --set "batch_size=$1" --set "dim=$2")
    log "relu_${1}x${2} $row"
  done
  row=$(eval_row "$KF" "X=1" matmul "$GEMM" --time --device-time-check --set M=1024 --set K=1024 --set N=1024)
  log "matmul_1024 $row"
fi

if [[ "$SKIP" != *C* ]]; then
  log "== C. decode-size evaluation with cached baselines (RMSNorm 1 x 2880, then again: cached)"
  log "run wall_s status median_s samples stopped_by checked parent_s"
  for run in first cached; do
    row=$(eval_row "$KF" "X=1" rmsnorm tests/fixtures/candidates/rmsnorm/honest.cu --time --baselines \
      --set batch_size=1 --set features=2880 --set dim1=1 --set dim2=1)
    log "$run $row"
  done
fi

if [[ "$SKIP" != *D* ]]; then
  log "== D. evaluations per GPU-hour: 4 candidates per task in one kforge eval (warm slots), timed"
  total=0; count=0
  for task in softmax sum_dim rmsnorm matmul; do
    cand=tests/fixtures/candidates/$task/honest.cu
    t0=$(now)
    timeout 300 "$KF" eval "${TASK[$task]}" "$cand" "$cand" "$cand" "$cand" --target nvidia-h200/cuda \
      --time --json --no-store ${SIZE[$task]} > "$OUT/d_$task.json" 2>> "$OUT/eval.err"
    t1=$(now)
    wall=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
    ok=$(python3 -c "import json; v=json.load(open('$OUT/d_$task.json')); v=v if isinstance(v,list) else [v]; print(sum(x['status']=='correct' for x in v))" 2>/dev/null || echo 0)
    log "$task: 4 evaluations in $wall s ($ok correct)"
    total=$(python3 -c "print($total + $wall)"); count=$((count + 4))
  done
  log "evaluations per GPU-hour: $(python3 -c "print(round($count * 3600 / $total))") ($count in $total s)"
fi

if [[ "$SKIP" != *E* ]]; then
  log "== E. red-team fixtures on the GPU (dynamic.toml where = h200)"
  KFORGE_FIXTURE_WHERE=h200 timeout 280 fixtures_gpu_test --gtest_filter='*redteam_*' 2>&1 |
    grep -vE '^\[ +RUN ' > "$OUT/redteam_gpu.log"
  grep -E '^\[ +(OK|FAILED|SKIPPED) ' "$OUT/redteam_gpu.log" | sed 's/Fixtures\/FixtureTest.VerdictIsTheExpectedOne\///' | tee -a "$SUMMARY"
  grep -E 'PASSED|FAILED TEST' "$OUT/redteam_gpu.log" | tee -a "$SUMMARY"
fi
log "== done $(date -u)"
