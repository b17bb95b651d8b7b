#!/usr/bin/env bash
# Issues 7 and 8 on a host with 2 H200s: `kforge bench` over the 37 level-2 GEMM tasks
# (examples/suites/level2-gemm.toml) replaying the recorded conversation. A device call lasts at
# most 600 s, so the work is in two parts, each its own call (bench/RESULTS.md):
#   PART=two-gpus  bench/h200x2_gemm.sh [CASSETTE]
#       the bench on both GPUs; writes $OUT/gemm-two-gpus.tgz (log, run store, report).
#   PART=one-gpu   bench/h200x2_gemm.sh [CASSETTE] [TWO_GPU_RUN]
#       at the same time, each on its own GPU: the bench restricted to GPU 0 (--devices 1), and a
#       serial loop of the same evaluations on GPU 1 (one cold `kforge eval` per task, one after
#       another, the candidates of TWO_GPU_RUN: the same answers from the same cassette); then
#       bench/compare_bench_runs.py between the two bench runs when TWO_GPU_RUN is given.
#       Writes $OUT/gemm-one-gpu.tgz.
# Every run has its own empty cache directory, so none profits from another's compiles.
# Default CASSETTE: .carry/conv/gemm.jsonl. Expects bench/h200_env.sh.
set -uo pipefail
source bench/h200_env.sh
CASSETTE=$(realpath "${1:-.carry/conv/gemm.jsonl}")
TWO_GPU_RUN=${2:-}
SUITE=$ROOT/examples/suites/level2-gemm.toml
PART=${PART:?PART=two-gpus or PART=one-gpu}
# A device call is killed at its limit and only what is under $OUT comes back: every step's
# timeout is cut to what is left of CALL_BUDGET_S (default 570 s) minus a reserve for the archive,
# and the small logs are copied to $OUT as they are written.
CALL_START=$(date +%s)
left() { echo $(( ${CALL_BUDGET_S:-570} - ($(date +%s) - CALL_START) - ${RESERVE_S:-30} )); }
W=/tmp/gemm-$PART; rm -rf $W; mkdir -p $W
nvidia-smi -L | tee $W/gpus.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $W/gpus.txt

now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }

bench() {  # bench NAME EXTRA-ARGS...   (timeout BENCH_TIMEOUT, default 500 s)
  local name=$1; shift
  local t0=$(now) limit=${BENCH_TIMEOUT:-500}
  (( limit > $(left) )) && limit=$(left)
  KFORGE_CACHE_DIR=$W/cache-$name timeout $limit kforge bench "$SUITE" \
    --target nvidia/cuda --model inbox --iterations 1 --replay "$CASSETTE" --replay-match numbers \
    --out $W/$name "$@" > $W/$name.log 2>&1
  echo "bench $name: exit $? (timeout $limit s), $(since $t0) s wall" | tee -a $W/walls.txt
  cp $W/$name.log $W/walls.txt $OUT/ 2>/dev/null
}

devices_used() {  # devices_used RUN_DIR: "device: evaluations" of a run store
  python3 - "$1/run.sqlite" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT device, count(*) FROM evaluations GROUP BY device ORDER BY device").fetchall()
print(", ".join(f"{d}: {n}" for d, n in rows))
PY
}

serial_loop() {  # serial_loop RUN_DIR: one cold `kforge eval` per evaluated candidate of RUN_DIR
  python3 - "$1/run.sqlite" > $W/serial-candidates.txt <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for name, meta, cand in db.execute(
        """SELECT t.name, t.metadata_json, c.id FROM evaluations e
           JOIN candidates c ON c.id = e.candidate_id JOIN tasks t ON t.id = c.task_id
           ORDER BY t.name"""):
    origin = json.loads(meta or "{}").get("origin", "")   # level2.jsonl#76
    print(name, "kernelbench:" + origin.replace(".jsonl#", "#"), cand)
PY
  local t0=$(now) n=0
  while read -r name source cand; do
    local file=$(ls $1/candidates/$cand/* | head -1)
    local e0=$(now)
    CUDA_VISIBLE_DEVICES=1 KFORGE_CACHE_DIR=$W/cache-serial timeout 60 kforge eval "$source" \
      "$file" --target nvidia/cuda --time --no-store > $W/serial-$n.txt 2>&1
    echo "$name $? $(since $e0)" >> $W/serial-evals.txt
    cp $W/serial-evals.txt $OUT/ 2>/dev/null
    n=$((n + 1))
    if (( $(date +%s) - ${t0%.*} > ${SERIAL_BUDGET_S:-480} || $(left) < 20 )); then
      echo "serial loop cut after $n evaluations (budget)" | tee -a $W/walls.txt; break
    fi
  done < $W/serial-candidates.txt
  echo "serial loop: $n of $(wc -l < $W/serial-candidates.txt) evaluations, $(since $t0) s wall" \
    | tee -a $W/walls.txt
}

if [ "$PART" = two-gpus ]; then
  bench two-gpus
  echo "two-gpus devices: $(devices_used $W/two-gpus)" | tee -a $W/walls.txt
  kforge report $W/two-gpus > $W/report-two-gpus.log 2>&1
else
  ( export CUDA_VISIBLE_DEVICES=0; bench one-gpu --devices 1 ) &
  serial_loop "${TWO_GPU_RUN:?the two-gpus run directory, for its candidates}" &
  wait
  echo "one-gpu devices: $(devices_used $W/one-gpu)" | tee -a $W/walls.txt
  python3 bench/compare_bench_runs.py "$TWO_GPU_RUN" $W/one-gpu > $W/compare.txt 2>&1
  tail -3 $W/compare.txt
  kforge report $W/one-gpu > $W/report-one-gpu.log 2>&1
fi
rm -rf $W/cache-*
tar -czf $OUT/gemm-$PART.tgz -C /tmp gemm-$PART
cat $W/walls.txt
