#!/usr/bin/env bash
# The last device call of session 4, one H200: (1) the compile-cache hit with its step
# breakdown (bench/h200_cache_hit.sh, HITS=5); (2) the GEMM bench's resumption: the one-GPU run
# of bench/h200_call_gemm_cuda.sh stopped after 29 of 37 tasks (carried in .carry/gemm-one-gpu),
# `kforge resume` finishes it, then its report; (3) while budget remains, a serial sample: cold
# `kforge eval` of three of its candidates one after another (the serial loop's cost per task).
# Outputs: $OUT/cache_hit*.{txt,json}, $OUT/final.tgz.
set -uo pipefail
source bench/h200_env.sh
start=$SECONDS
HITS=${HITS:-5} timeout 120 bash bench/h200_cache_hit.sh > /dev/null 2>&1; tail -4 $OUT/cache_hit.txt
W=/tmp/gemm-x2; rm -rf $W; mkdir -p $W; cp -r .carry/gemm-one-gpu $W/one-gpu
t0=$(date +%s.%N)
KFORGE_CACHE_DIR=$W/cache-resume timeout ${RESUME_TIMEOUT:-200} kforge resume $W/one-gpu > $W/resume.log 2>&1
echo "resume: exit $?, $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s wall" | tee $W/walls.txt
tail -4 $W/resume.log
kforge report $W/one-gpu > $W/report.log 2>&1
python3 - $W/one-gpu/run.sqlite <<'PY' | tee -a $W/walls.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, s, t0, t1 = db.execute("select count(*), sum(wall_s), min(created_at), max(created_at) from evaluations").fetchone()
print(f"evaluations {n}, sum of evaluation wall {s:.1f} s")
PY
for spec in "76 76_Gemm_Add_ReLU" "12 12_Gemm_Multiply_LeakyReLU" "63 63_Gemm_ReLU_Divide"; do
  (( SECONDS - start > ${SERIAL_AFTER_S:-260} )) && { echo "serial sample stopped (budget)"; break; }
  set -- $spec
  cand=$(ls $W/one-gpu/best/$2/* 2>/dev/null | head -1)
  [ -z "$cand" ] && continue
  t0=$(date +%s.%N)
  KFORGE_CACHE_DIR=$W/cache-serial kforge eval kernelbench:level2#$1 "$cand" --target nvidia/cuda --time --no-store > $W/serial-$1.txt 2>&1
  echo "serial eval level2#$1: exit $?, $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s wall" | tee -a $W/walls.txt
done
rm -rf $W/cache-*
tar -czf $OUT/final.tgz -C /tmp gemm-x2
cat $W/walls.txt
