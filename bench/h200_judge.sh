#!/usr/bin/env bash
# The judge outside the candidate's process (docs/trust.md, runner/HARNESS.md) on an NVIDIA H200,
# in one device call of at most about 8 minutes. Run from the repository root:
#
#   OLD_KFORGE=/path/to/old/kforge bash bench/h200_judge.sh      # OLD_KFORGE may be absent
#
# Set-up (bench/h200_env.sh): .carry/bin/kforge (this tree), .carry/bin/fixtures_gpu_test (this
# tree's tests/eval), .carry/lib (spdlog, toml++), .carry/kernelbench, .whl/ (pyopencl). The
# harness is built here, by this machine's nvcc, from harness/ (it needs nlohmann/json.hpp: from
# /usr/include, or carried in .carry/include/nlohmann). OLD_KFORGE_HOME: the checkout the old
# binary belongs to (its runner/, templates); default: this one.
#
# Steps (each bounded; a step that would start after STEP_BUDGET_S seconds is skipped and says so):
#   H. kforge-harness-cuda built with nvcc (BIND_NOW, RELRO checked), used through
#      KFORGE_HARNESS_DIR; if the build fails, the carried .carry/bin/kforge-harness-cuda is used
#      and the table says so.
#   A. evaluation wall time, whole `kforge eval` commands, `--time`: ReLU 1024x4096 and a GEMM
#      1024^3 on nvidia-h200/cuda, fresh compile (empty cache) then cache hit, the old binary and
#      the new one alternating (without OLD_KFORGE: the new binary's in-process path,
#      KFORGE_NATIVE_HARNESS=0, stands in and is labelled `legacy`).
#   B. the cold protocol against Nsight Compute (`--device-time-check`): ReLU at three sizes and
#      the GEMM; agreement = within 3 % (or 0.5 us) of ncu's kernel time (eval/device_time_check.h).
#   E. the .cu red-team fixtures of dynamic.toml (where = "h200") with their honest twins, through
#      fixtures_gpu_test.
# Output: $OUT/summary.txt (the table last), $OUT/*.json verdicts, $OUT/redteam_gpu.log,
# $OUT/harness_build.log. Knobs: REPEATS (A, default 1), SKIP (letters of steps to skip),
# STEP_BUDGET_S (default 420), EVAL_TIMEOUT_S (one evaluation, default 150), DTC_TIMEOUT_S (one
# evaluation with the Nsight Compute check, default 300: ncu replays every kernel of a fresh
# harness, which a first run on the H200 did not finish in 150 s). After a call that measured A,
# `SKIP=A` gives B and E the whole budget.
set -uo pipefail
source bench/h200_env.sh
REPEATS=${REPEATS:-1}
SKIP=${SKIP:-}
STEP_BUDGET_S=${STEP_BUDGET_S:-420}
EVAL_TIMEOUT_S=${EVAL_TIMEOUT_S:-150}
DTC_TIMEOUT_S=${DTC_TIMEOUT_S:-300}
START=$(date +%s)
SUMMARY=$OUT/summary.txt
TABLE=$OUT/table.txt
: > "$SUMMARY"
: > "$TABLE"
log() { echo "$*" | tee -a "$SUMMARY"; }
row() { echo "$*" >> "$TABLE"; }
elapsed() { echo $(($(date +%s) - START)); }
in_budget() {  # in_budget STEP: false (and a line) once the budget is spent
  if [ "$(elapsed)" -ge "$STEP_BUDGET_S" ]; then
    log "$1: skipped, $(elapsed) s spent (STEP_BUDGET_S=$STEP_BUDGET_S)"
    row "$1 | skipped (time budget)"
    return 1
  fi
  return 0
}
KF=$(command -v kforge || echo kforge)
OLD=${OLD_KFORGE:-}
OLD_HOME=${OLD_KFORGE_HOME:-$ROOT}
RELU=tests/fixtures/candidates/relu/honest.cu
GEMM=tests/fixtures/candidates/matmul/honest.cu
RELU_TASK="kernelbench:level1#19"
GEMM_TASK="kernelbench:level1#2"
RELU_SIZE="--set batch_size=1024 --set dim=4096"
GEMM_SIZE="--set M=1024 --set K=1024 --set N=1024"

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  command -v nvcc && nvcc --version | tail -2
  command -v ncu || ls /usr/local/cuda/bin/ncu
  "$KF" --version 2>&1 | head -1
  if [ -n "$OLD" ]; then echo "old: $OLD ($("$OLD" --version 2>&1 | head -1)), home $OLD_HOME"; fi
  grep -i RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null
} > "$OUT/env.txt" 2>&1
tee -a "$SUMMARY" < "$OUT/env.txt"
export PATH=$PATH:/usr/local/cuda/bin

# --- H. the harness, built by this machine's nvcc ------------------------------------------
HB=/tmp/kforge-judge-harness
rm -rf "$HB"; mkdir -p "$HB/obj"
JSON_INC=""
for d in /usr/include "$ROOT/.carry/include"; do
  if [ -f "$d/nlohmann/json.hpp" ]; then JSON_INC=$d; break; fi
done
build_harness() {
  [ -n "$JSON_INC" ] || { echo "no nlohmann/json.hpp in /usr/include or .carry/include"; return 1; }
  command -v nvcc >/dev/null || { echo "no nvcc"; return 1; }
  local std=c++23
  echo 'int main(){}' > "$HB/probe.cc"
  g++ -std=c++23 -c "$HB/probe.cc" -o "$HB/probe.o" 2>/dev/null || std=c++20
  local inc=(-I harness -I runner/kforge_runner/abi -I "$JSON_INC")
  local pids=() f
  for f in main harness isolation no_fork; do
    g++ -std=$std -O2 "${inc[@]}" -isystem /usr/local/cuda/include -c harness/$f.cc \
      -o "$HB/obj/$f.o" & pids+=($!)
  done
  nvcc -std=c++17 -O2 "${inc[@]}" -gencode arch=compute_90,code=sm_90 -c harness/cuda_device.cu \
    -o "$HB/obj/cuda_device.o" & pids+=($!)
  local ok=0 p
  for p in "${pids[@]}"; do wait "$p" || ok=1; done
  [ $ok = 0 ] || return 1
  nvcc -o "$HB/kforge-harness-cuda" "$HB"/obj/*.o -cudart static -ldl -lpthread -lrt \
    -Xlinker -z,now -Xlinker -z,relro || return 1
  readelf -d "$HB/kforge-harness-cuda" | grep -E "BIND_NOW|FLAGS" || return 1
  readelf -l "$HB/kforge-harness-cuda" | grep -q GNU_RELRO || return 1
  "$HB/kforge-harness-cuda" --version
}
t0=$(date +%s.%N)
if build_harness > "$OUT/harness_build.log" 2>&1; then
  HARNESS_FROM="built here by nvcc ($(nvcc --version | grep -o 'release [0-9.]*'))"
else
  HARNESS_FROM="carried .carry/bin (the nvcc build failed: $OUT/harness_build.log)"
  cp "$ROOT/.carry/bin/kforge-harness-cuda" "$HB/" 2>/dev/null ||
    HARNESS_FROM="none (the nvcc build failed and none is carried)"
fi
[ -x "$ROOT/.carry/bin/kforge-harness-cpu" ] && cp "$ROOT/.carry/bin/kforge-harness-cpu" "$HB/"
export KFORGE_HARNESS_DIR=$HB
build_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.0f}')")
log "== H. harness: $HARNESS_FROM, ${build_s} s"
tail -3 "$OUT/harness_build.log" | tee -a "$SUMMARY"
row "H harness | $HARNESS_FROM | ${build_s} s"

# --- one evaluation: "<wall_s> <status> <median_us> <samples> <stopped_by> <checked> <parent_us> <dtc> <ncu_us>"
cat > "$OUT/row.py" <<'PY'
import json, sys
path, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
wall = f"{t1 - t0:.2f}"
try:
    v = json.load(open(path))
    v = v[0] if isinstance(v, list) else v
except Exception:
    print(wall, "unreadable - - - - - - -"); sys.exit()
t = (v.get("timing") or {}).get("candidate") or {}
us = lambda s: "-" if s is None else f"{s * 1e6:.2f}"
d = v.get("device_time_check") or {}
print(wall, v.get("status"), us(t.get("median_s")), t.get("samples", "-"), t.get("stopped_by", "-"),
      t.get("checked_samples", "-"), us(t.get("parent_median_s")), d.get("outcome", "-"),
      us(d.get("device_s")))
PY
eval_row() {  # eval_row NAME BINARY HOME ENV TASK CANDIDATE ARGS...
  local name=$1 bin=$2 home=$3 envs=$4 task=$5 cand=$6
  shift 6
  local t0 t1
  t0=$(date +%s.%N)
  env KFORGE_HOME="$home" $envs timeout "${EVAL_LIMIT:-$EVAL_TIMEOUT_S}" "$bin" eval "$task" "$cand" --target nvidia-h200/cuda \
    --json --no-store "$@" > "$OUT/$name.json" 2>> "$OUT/eval.err"
  t1=$(date +%s.%N)
  python3 "$OUT/row.py" "$OUT/$name.json" "$t0" "$t1"
}

# --- A. wall time, old and new, fresh compile and cache hit ---------------------------------
if [[ "$SKIP" != *A* ]] && in_budget A; then
  if [ -n "$OLD" ] && [ -x "$OLD" ]; then before=old; else before=legacy; fi
  log "== A. evaluation wall time (whole kforge eval, --time), nvidia-h200/cuda; before = $before"
  log "variant task cache | wall_s status median_us samples stopped_by checked parent_us"
  for r in $(seq "$REPEATS"); do
    for tc in "relu|$RELU_TASK|$RELU|$RELU_SIZE" "gemm|$GEMM_TASK|$GEMM|$GEMM_SIZE"; do
      IFS='|' read -r task tid cand size <<< "$tc"
      for variant in "$before" new; do
        case $variant in
          old) bin=$OLD; home=$OLD_HOME; envs="KFORGE_HARNESS_DIR=$HB" ;;
          legacy) bin=$KF; home=$ROOT; envs="KFORGE_NATIVE_HARNESS=0" ;;
          new) bin=$KF; home=$ROOT; envs="KFORGE_HARNESS_DIR=$HB" ;;
        esac
        cache=/tmp/kforge-judge-cache-$variant-$task-$r
        rm -rf "$cache"
        for c in fresh hit; do
          in_budget "A $variant $task $c" || continue
          out=$(eval_row "a_${variant}_${task}_${c}_$r" "$bin" "$home" "$envs KFORGE_CACHE_DIR=$cache" \
            "$tid" "$cand" --time $size)
          log "$variant $task $c | $out"
          echo "$variant $task $c ${out%% *} $(echo "$out" | cut -d' ' -f2)" >> "$OUT/a_rows.txt"
        done
      done
    done
  done
  python3 - "$OUT/a_rows.txt" "$before" >> "$TABLE" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
before = sys.argv[2]
walls = {}
for variant, task, cache, wall, status in rows:
    walls.setdefault((task, cache, variant), []).append((float(wall), status))
for task in ("relu", "gemm"):
    for cache in ("fresh", "hit"):
        b = walls.get((task, cache, before), [])
        n = walls.get((task, cache, "new"), [])
        if not b or not n:
            continue
        mb = statistics.median(w for w, _ in b)
        mn = statistics.median(w for w, _ in n)
        st = "/".join(sorted({s for _, s in b + n}))
        print(f"A {task} {cache} | {before} {mb:.2f} s | new {mn:.2f} s | new/{before} {mn / mb:.2f} | {st}")
PY
fi

# --- B. the cold protocol against Nsight Compute --------------------------------------------
if [[ "$SKIP" != *B* ]] && in_budget B; then
  log "== B. cold protocol vs Nsight Compute (--device-time-check; agree: within 3 % or 0.5 us)"
  log "kernel | wall_s status median_us samples stopped_by checked parent_us check ncu_us"
  for k in "relu_64x4096|$RELU_TASK|$RELU|--set batch_size=64 --set dim=4096" \
           "relu_1024x4096|$RELU_TASK|$RELU|$RELU_SIZE" \
           "relu_8192x8192|$RELU_TASK|$RELU|--set batch_size=8192 --set dim=8192" \
           "gemm_1024|$GEMM_TASK|$GEMM|$GEMM_SIZE"; do
    IFS='|' read -r name tid cand size <<< "$k"
    in_budget "B $name" || continue
    out=$(EVAL_LIMIT=$DTC_TIMEOUT_S eval_row "b_$name" "$KF" "$ROOT" "KFORGE_HARNESS_DIR=$HB" \
      "$tid" "$cand" --time --device-time-check $size)
    log "$name | $out"
    read -r _ status med _ _ _ _ check ncu <<< "$out"
    ratio=$(python3 -c "print(f'{float(\"$med\") / float(\"$ncu\"):.3f}')" 2>/dev/null || echo -)
    row "B $name | cold ${med} us | ncu ${ncu} us | cold/ncu $ratio | $check"
  done
fi

# --- E. the .cu red-team fixtures and their honest twins ------------------------------------
if [[ "$SKIP" != *E* ]] && in_budget E; then
  log "== E. .cu red-team fixtures (dynamic.toml, where = h200) and honest twins"
  left=$((STEP_BUDGET_S + 60 - $(elapsed)))
  [ "$left" -lt 60 ] && left=60
  KFORGE_FIXTURE_WHERE=h200 timeout "$left" fixtures_gpu_test --gtest_filter='*redteam_*_cu_*' 2>&1 |
    grep -vE '^\[ +RUN ' > "$OUT/redteam_gpu.log"
  # One line per case (gtest repeats failures in its closing list, without the time).
  grep -E '^\[ +(OK|FAILED|SKIPPED) \] .* ms\)$' "$OUT/redteam_gpu.log" > "$OUT/redteam_cases.txt"
  sed 's/Fixtures\/FixtureTest.VerdictIsTheExpectedOne\///; s/, where GetParam() = / /' \
    "$OUT/redteam_cases.txt" | tee -a "$SUMMARY"
  ok=$(grep -c '^\[       OK \]' "$OUT/redteam_cases.txt")
  failed=$(grep -c '^\[  FAILED  \]' "$OUT/redteam_cases.txt")
  skipped=$(grep -c '^\[  SKIPPED \]' "$OUT/redteam_cases.txt")
  row "E redteam .cu | $ok ok | $failed failed | $skipped skipped"
fi

log "== done $(date -u), $(elapsed) s"
log ""
log "== table (step | figures)"
tee -a "$SUMMARY" < "$TABLE"
