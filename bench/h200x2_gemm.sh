#!/usr/bin/env bash
# Issues 7 and 8 on a host with 2 H200s (RUNS=one-gpu: issue 7's part on a one-GPU host): `kforge bench` over the 37 level-2 GEMM tasks
# (examples/suites/level2-gemm.toml) replaying the recorded conversation, on both GPUs and on one
# (--devices 1), then a serial loop of the same evaluations (one `kforge eval` per task, one after
# another, GPU 0). Each of the three uses its own empty cache directory, so none profits from
# another's compiles. Then: same verdicts? timings of the 2-GPU run (other GPU busy) against the
# 1-GPU run (bench/compare_bench_runs.py); the report of the 2-GPU run.
#   bench/h200x2_gemm.sh [CASSETTE]     (default .carry/conv/gemm.jsonl)
# Expects bench/h200_env.sh. Writes $OUT/gemm-x2.tgz (logs, comparison, report, run stores).
set -uo pipefail
source bench/h200_env.sh
CASSETTE=$(realpath "${1:-.carry/conv/gemm.jsonl}")
SUITE=$ROOT/examples/suites/level2-gemm.toml
W=/tmp/gemm-x2; rm -rf $W; mkdir -p $W
nvidia-smi -L | tee $W/gpus.txt
bench() {  # bench NAME EXTRA-ARGS...
  local name=$1; shift
  local t0=$(date +%s.%N)
  KFORGE_CACHE_DIR=$W/cache-$name timeout ${BENCH_TIMEOUT:-240} kforge bench "$SUITE" --target nvidia/cuda \
    --model inbox --iterations 1 --replay "$CASSETTE" --replay-match numbers --out $W/$name "$@" \
    > $W/$name.log 2>&1
  local rc=$? t1=$(date +%s.%N)
  echo "$name: exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall" | tee -a $W/walls.txt
  tail -3 $W/$name.log
}
RUNS=${RUNS:-two-gpus one-gpu}   # RUNS=one-gpu on a one-GPU host (issue 7 only)
for r in $RUNS; do
  if [ $r = two-gpus ]; then bench two-gpus; else bench one-gpu --devices 1; fi
done
echo "== devices used"; for r in $RUNS; do
  echo "$r: $(sqlite3 $W/$r/run.sqlite 'SELECT device, count(*) FROM evaluations GROUP BY device' | tr '\n' ' ')"
done | tee -a $W/walls.txt
echo "== serial loop (GPU 0, one kforge eval per task, the one-GPU run's candidates)"
sqlite3 -separator ' ' $W/one-gpu/run.sqlite "
  SELECT t.name, json_extract(t.metadata_json, '$.origin'), c.id FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
  JOIN tasks t ON t.id = c.task_id ORDER BY t.name" > $W/serial-candidates.txt
t0=$(date +%s.%N); n=0
while read -r name origin cand; do
  source="kernelbench:${origin%%.jsonl#*}#${origin##*#}"   # level2.jsonl#76 -> kernelbench:level2#76
  file=$(ls $W/one-gpu/candidates/$cand/* | head -1)
  CUDA_VISIBLE_DEVICES=0 KFORGE_CACHE_DIR=$W/cache-serial timeout 120 kforge eval "$source" "$file" \
    --target nvidia/cuda --time --no-store > $W/serial-$n.txt 2>&1
  n=$((n + 1))
  (( $(date +%s) - ${t0%.*} > ${SERIAL_BUDGET_S:-300} )) && { echo "serial loop cut after $n evaluations"; break; }
done < $W/serial-candidates.txt
t1=$(date +%s.%N)
echo "serial: $n evaluations, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall" | tee -a $W/walls.txt
if [ -d $W/two-gpus ]; then
  python3 bench/compare_bench_runs.py $W/one-gpu $W/two-gpus > $W/compare.txt 2>&1; tail -2 $W/compare.txt
fi
for r in $RUNS; do kforge report $W/$r > $W/report-$r.log 2>&1; done
rm -rf $W/cache-*
tar -czf $OUT/gemm-x2.tgz -C /tmp gemm-x2
cat $W/walls.txt
