#!/usr/bin/env bash
# `kforge eval` in KernelBench compatibility mode must reach KernelBench's own verdict
# (tests/compat/kernelbench_rules.py) on KernelBench-style load_inline submissions, except where
# KForge is stricter by design: a bug that KernelBench's inputs cannot show (its ReLU inputs are all
# positive) is caught by KForge's second input distribution (negatives.py) or its all-negative
# trial, whose output is all zeros, so that leaking 0.001 x of each negative input is an error the
# size of the whole output (leaky.py); those cases must differ, as documented.
# Usage: compare_verdicts.sh KFORGE PYTHON
set -uo pipefail
KFORGE=$1
PYTHON=${2:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
DATA=${KFORGE_KERNELBENCH_DIR:-../shared/data/kernelbench}
if [ ! -f "$DATA/level1.jsonl" ]; then echo "SKIP: no KernelBench data at $DATA"; exit 77; fi
F=tests/fixtures/candidates/relu
failures=0
# submission:expected relation
for entry in kernelbench_inline_cpp.py:agree kernelbench_inline_cpp_leaky.py:stricter \
             kernelbench_inline_cpp_tail.py:agree kernelbench_inline_cpp_negatives.py:stricter; do
  submission=$F/${entry%%:*}
  expected=${entry##*:}
  kb=$(TORCH_EXTENSIONS_DIR=$(mktemp -d) "$PYTHON" tests/compat/kernelbench_rules.py \
        --task-jsonl "$DATA/level1.jsonl" --problem-id 19 \
        --overrides '{"batch_size": 16, "dim": 1024}' "$submission" 2>/dev/null | tail -1)
  "$KFORGE" eval kernelbench:level1#19 "$submission" --target cpu/cpp \
      --set batch_size=16 --set dim=1024 --no-store >/dev/null 2>&1
  rc=$?
  if [ $rc = 0 ]; then ours=correct; elif [ $rc = 1 ]; then ours=incorrect; else ours="error($rc)"; fi
  if [ "${kb%%:*}" = "$ours" ]; then relation=agree
  elif [ "${kb%%:*}" = correct ] && [ "$ours" = incorrect ]; then relation=stricter
  else relation=differ; fi
  [ "$relation" = "$expected" ] || failures=$((failures + 1))
  echo "$relation (expected $expected)  $(basename "$submission"): KernelBench rule: $kb; kforge: $ours"
done
echo "$((4 - failures)) passed, $failures failed"
exit $failures
