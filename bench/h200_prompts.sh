#!/usr/bin/env bash
# Writes the first prompt of `kforge run` for the recorded H200 conversations (nvidia/cuda on
# level 2 #76, nvidia/triton on level 2 #86) through the inbox, without waiting: the answers are
# written elsewhere and the conversations recorded by bench/h200_conversations.sh.
set -uo pipefail
OUT=${OUT:-$PWD/out}
for spec in "cuda 76" "triton 86"; do
  set -- $spec
  mkdir -p /tmp/conv-$1 && cd /tmp/conv-$1
  kforge run kernelbench:level2#$2 --target nvidia/$1 --model inbox --iterations 1 --runs-dir /tmp/conv-$1/runs > run.log 2>&1
  tail -2 run.log
  mkdir -p $OUT/conv-$1 && cp kforge-inbox/*prompt.md $OUT/conv-$1/
  cd - >/dev/null
done
