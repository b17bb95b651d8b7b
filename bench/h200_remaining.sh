#!/usr/bin/env bash
# What the H200 still owes issues 3, 5 and 6 after stop 11, in one call (about 8 minutes):
#   1. calibration, then `--baselines` on level 2 #9 (mostly_zero) and #76 (SOL fraction);
#   2. the red-team GPU cases (bench/h200_redteam.sh);
#   3. the cuda conversation's second prompt (answer .carry/conv/cuda/0002-answer.md next time);
#   4. the six profile fixtures with ncu's smaller section set, archived in one file.
# Everything lands in $OUT/remaining.tgz (the device tool returns few files). Needs bench/h200_env.sh.
set -uo pipefail
source bench/h200_env.sh
R=/tmp/remaining; mkdir -p $R
kforge calibrate --target nvidia/cuda > $R/calibrate.txt 2>&1
TMAX=3 bash bench/h200_level2_baselines.sh > $R/level2.txt 2>&1
bash bench/h200_redteam.sh > $R/redteam.txt 2>&1
mkdir -p /tmp/conv2/kforge-inbox && cp .carry/conv/cuda/* /tmp/conv2/kforge-inbox/
(cd /tmp/conv2 && kforge run kernelbench:level2#76 --target nvidia/cuda --model inbox --iterations 2 \
   --no-profile --runs-dir /tmp/conv2/runs > $R/conv-cuda.txt 2>&1; cp kforge-inbox/*prompt.md $R/)
KFORGE_NCU_SET=${KFORGE_NCU_SET:-basic} KFORGE_NCU_LAUNCH_COUNT=${KFORGE_NCU_LAUNCH_COUNT:-50} \
  OUT=$R timeout 300 bash bench/h200_profile_quick.sh > $R/profile.txt 2>&1
tar -czf "$OUT/remaining.tgz" -C /tmp remaining
tail -5 $R/*.txt
