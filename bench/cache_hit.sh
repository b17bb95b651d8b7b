#!/usr/bin/env bash
# The time to evaluate a candidate whose compile is a cache hit (the bound: a cache hit <= 1 s):
# one `kforge eval` invocation with the same candidate N+1 times (5 correctness trials each, no
# timing). The first evaluation compiles (or hits the cache) and starts cold; the other N are cache
# hits whose runners warmed during the evaluation before. Prints each verdict's total and where it
# went (the verdict's seconds.steps: orchestrator, reference runner, candidate runner), then the
# median, min and max of the N cache-hit totals and the median of each step, and the invocation's
# wall time per evaluation.
#   bench/cache_hit.sh [N]     defaults: N=7, nvidia/cuda, KernelBench level 1 #19 (ReLU) at
#                              1024 x 4096 fp32, tests/fixtures/candidates/relu/honest.cu
#   TARGET=cpu/cpp CANDIDATE=tests/fixtures/candidates/relu/honest.cpp bench/cache_hit.sh 7
# Knobs: KFORGE (binary), TASK, SIZES ("--set batch_size=1024 --set dim=4096"), EXTRA (more
# `kforge eval` flags), KEEP_JSON (a path to keep the verdicts). Needs jq.
set -uo pipefail
N=${1:-7}
KFORGE=${KFORGE:-build/dev/src/cli/kforge}
TARGET=${TARGET:-nvidia/cuda}
CANDIDATE=${CANDIDATE:-tests/fixtures/candidates/relu/honest.cu}
TASK=${TASK:-kernelbench:level1#19}
SIZES=${SIZES:---set batch_size=1024 --set dim=4096}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

files=()
for i in $(seq 0 "$N"); do files+=("$CANDIDATE"); done
start=$(date +%s%N)
# shellcheck disable=SC2086  # SIZES and EXTRA are lists of words
"$KFORGE" eval "$TASK" "${files[@]}" --target "$TARGET" $SIZES ${EXTRA:-} --json --no-store \
  >"$tmp/verdicts.json" 2>"$tmp/stderr.txt"
end=$(date +%s%N)
[ -n "${KEEP_JSON:-}" ] && cp "$tmp/verdicts.json" "$KEEP_JSON"
# The output is one JSON array, or verdicts one after another: slurp both into one array.
jq -s 'if length == 1 and (.[0] | type) == "array" then .[0] else . end' "$tmp/verdicts.json" \
  >"$tmp/all.json" || { echo "no verdicts; stderr:"; tail -20 "$tmp/stderr.txt"; exit 1; }
jq -r '
  def r: if . == null then null else (. * 1000 | round) / 1000 end;
  def steps(s): [s // {} | to_entries[] | "\(.key) \(.value | r)"] | join(", ");
  to_entries[] | .key as $i | .value as $v |
  "eval \($i) \($v.status) total \($v.seconds.total | r) s (compile hit \($v.compile_cache_hit))",
  "  orchestrator: \(steps($v.seconds.steps.orchestrator))",
  "  reference:    \(steps($v.seconds.steps.reference))",
  "  candidate:    \(steps($v.seconds.steps.candidate))"' "$tmp/all.json"
jq -r --argjson wall "$(( (end - start) / 1000000 ))" '
  def r: if . == null then null else (. * 1000 | round) / 1000 end;
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
              else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  .[1:] as $hits |
  "cache hits (evaluations 1..\($hits | length)): median total \([$hits[].seconds.total] | median | r) s, min \([$hits[].seconds.total] | min | r) s, max \([$hits[].seconds.total] | max | r) s; all correct: \([$hits[].status == "correct"] | all)",
  "  median seconds.reference \([$hits[].seconds.reference] | median | r), seconds.candidate \([$hits[].seconds.candidate] | median | r)",
  (["orchestrator", "reference", "candidate"][] as $who |
   "  median steps, \($who): " +
   ([$hits[].seconds.steps[$who] // {} | keys[]] | unique | map(. as $k |
      "\($k) \([$hits[].seconds.steps[$who][$k] // empty] | median | r)") | join(", "))),
  "invocation wall \($wall / 1000 | r) s for \(length) evaluations (\($wall / 1000 / length | r) s each, the cold first one included)"' \
  "$tmp/all.json"
