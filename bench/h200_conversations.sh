#!/usr/bin/env bash
# Recorded conversations on the H200: record the conversations whose answers were written through the inbox
# (carried in .carry/conv/<model>/NNNN-{prompt,answer}.md, first prompts written by
# bench/h200_prompts.sh), then replay each cassette through the real harness.
# Expects bench/h200_env.sh. Writes $OUT/conv-<model>.jsonl and logs.
set -uo pipefail
OUT=${OUT:-$PWD/out}
NOTE="Answered through the inbox on 2026-11-29 by KForge helper agents (LLMs acting as the model): each prompt file, and nothing else, was handed to a fresh helper that wrote the answer as a model would, without running anything. Not the output of a named commercial model API."
for spec in "cuda 76" "triton 86"; do
  set -- $spec
  mkdir -p /tmp/rec-$1/kforge-inbox && cp .carry/conv/$1/* /tmp/rec-$1/kforge-inbox/
  ( cd /tmp/rec-$1 && kforge run kernelbench:level2#$2 --target nvidia/$1 --model inbox \
      --iterations 1 --record $OUT/conv-$1.jsonl --record-note "$NOTE" --runs-dir /tmp/rec-$1/runs \
      > $OUT/conv-$1-record.log 2>&1; echo "record exit $?" )
  grep -E "^sample|^Best|^No correct" $OUT/conv-$1-record.log
  ( cd /tmp && kforge run kernelbench:level2#$2 --target nvidia/$1 --model inbox --iterations 1 \
      --replay $OUT/conv-$1.jsonl --replay-match numbers --runs-dir /tmp/rep-$1 \
      > $OUT/conv-$1-replay.log 2>&1; echo "replay exit $?" )
  grep -E "^sample|^Best|^No correct" $OUT/conv-$1-replay.log
  best=$(ls /tmp/rep-$1/*/best/* 2>/dev/null | head -1)
  [ -n "$best" ] && kforge eval kernelbench:level2#$2 "$best" -t nvidia/$1 --time --time-max-seconds 5 --no-store 2>&1 |
    grep -E "^[a-z_]+  |timing|eager|speedup|physics" | cut -c1-240 | tee $OUT/conv-$1-eval.txt
done
