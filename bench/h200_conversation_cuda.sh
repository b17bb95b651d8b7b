#!/usr/bin/env bash
# Recorded conversations on the H200: the nvidia/cuda conversation on KernelBench level 2 #76, two passes (the
# first answer ended in runtime_error; its second prompt was written on the H200 by
# bench/h200_remaining.sh and answered through the inbox). Records the cassette from the answered
# inbox (.carry/conv/cuda/), replays it through the real harness, and times the final kernel.
# Expects bench/h200_env.sh. Writes $OUT/conv-cuda.jsonl and logs.
set -uo pipefail
OUT=${OUT:-$PWD/out}
NOTE="Answered through the inbox on 2026-11-29 by KForge helper agents (LLMs acting as the model): each prompt file, and nothing else, was handed to a fresh helper that wrote the answer as a model would, without running anything. Not the output of a named commercial model API."
R=/tmp/rec-cuda2; rm -rf $R; mkdir -p $R/kforge-inbox && cp .carry/conv/cuda/* $R/kforge-inbox/
( cd $R && kforge run kernelbench:level2#76 --target nvidia/cuda --model inbox --iterations 2 --no-profile \
    --record $OUT/conv-cuda.jsonl --record-note "$NOTE" --runs-dir $R/runs > $OUT/conv-cuda-record.log 2>&1
  echo "record exit $?" )
grep -E "^sample|^Best|^No correct|waiting" $OUT/conv-cuda-record.log
( cd /tmp && kforge run kernelbench:level2#76 --target nvidia/cuda --model inbox --iterations 2 --no-profile \
    --replay $OUT/conv-cuda.jsonl --replay-match numbers --runs-dir /tmp/rep-cuda2 > $OUT/conv-cuda-replay.log 2>&1
  echo "replay exit $?" )
grep -E "^sample|^Best|^No correct|iteration" $OUT/conv-cuda-replay.log
best=$(ls /tmp/rep-cuda2/*/best/* 2>/dev/null | head -1)
[ -n "$best" ] && kforge eval kernelbench:level2#76 "$best" -t nvidia/cuda --time --time-max-seconds 5 --no-store 2>&1 |
  grep -E "^[a-z_]+  |timing|eager|compile|speedup|physics" | cut -c1-240 | tee $OUT/conv-cuda-eval.txt
