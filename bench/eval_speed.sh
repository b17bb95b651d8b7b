#!/usr/bin/env bash
# Times `kforge eval` (compile + 5-trial correctness, sandboxed runners) for one kernel:
#   single  - separate invocations, each with a fresh compile: everything cold;
#   batch   - one invocation evaluating N candidates that differ only in a comment (fresh compiles),
#             so each evaluation's runners were warmed while the previous one ran;
#   cached  - one invocation evaluating the same file N times (compile-cache hits);
#   inline  - the same kernel as a KernelBench-style load_inline submission (compatibility mode).
# Per-evaluation times are the verdicts' own "total" (first step to verdict). Defaults:
# nvidia/cuda, KernelBench level 1 #19 (ReLU) at 1024 x 4096 fp32. For a CPU smoke run:
#   TARGET=cpu/cpp CANDIDATE=tests/fixtures/candidates/relu/honest.cpp \
#   INLINE=tests/fixtures/candidates/relu/kernelbench_inline_cpp.py bench/eval_speed.sh 3 1
set -uo pipefail
N=${1:-7}          # candidates per batch
M=${2:-2}          # load_inline runs
KFORGE=${KFORGE:-build/dev/src/cli/kforge}
TARGET=${TARGET:-nvidia/cuda}
CANDIDATE=${CANDIDATE:-tests/fixtures/candidates/relu/honest.cu}
INLINE=${INLINE:-tests/fixtures/candidates/relu/kernelbench_inline_cuda.py}
TASK=kernelbench:level1#19
SIZES=(--set batch_size=1024 --set dim=4096)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }
# eval LABEL FILES... : one invocation; prints each verdict's status and total, and the wall time.
evaluate() {
  local label=$1 start end
  shift
  start=$(now)
  "$KFORGE" eval "$TASK" "$@" --target "$TARGET" "${SIZES[@]}" --json --no-store >"$tmp/out.json"
  end=$(now)
  # Keys come in alphabetical order; "verdict_version" closes each verdict.
  grep -E '"status": "|"total": |"compile": [0-9]|"reference": [0-9]|"candidate": [0-9]|"compile_cache_hit"|"verdict_version"' "$tmp/out.json" |
    sed -E 's/[",]//g' | awk -v label="$label" '
      /status:/ {status=$2} /compile_cache_hit:/ {hit=$2} /compile:/ {c=$2} /reference:/ {r=$2}
      /candidate:/ {k=$2} /total:/ {t=$2}
      /verdict_version:/ {printf "%-7s total %6.2f s  status %-13s compile %5.2f s (hit %s)  reference %5.2f s  candidate %5.2f s\n", label, t, status, c, hit, r, k}'
  awk -v s="$start" -v e="$end" -v n=$# -v label="$label" \
    'BEGIN {printf "%-7s invocation wall %.2f s for %d evaluation(s)\n", label, (e - s) / 1e9, n}'
}
ext="${CANDIDATE##*.}"
variants=()
for i in $(seq 1 "$N"); do
  cp "$CANDIDATE" "$tmp/variant_$i.$ext"
  echo "// variant $i $RANDOM$RANDOM" >>"$tmp/variant_$i.$ext"
  variants+=("$tmp/variant_$i.$ext")
done
for i in 1 2 3; do
  cp "$CANDIDATE" "$tmp/single_$i.$ext"
  echo "// single $i $RANDOM$RANDOM" >>"$tmp/single_$i.$ext"
  evaluate single "$tmp/single_$i.$ext"
done | tee "$tmp/single.txt"
evaluate batch "${variants[@]}" | tee "$tmp/batch.txt"
cached=()
for i in $(seq 1 "$N"); do cached+=("${variants[0]}"); done
evaluate cached "${cached[@]}" | tee "$tmp/cached.txt"
for i in $(seq 1 "$M"); do evaluate inline "$INLINE"; done | tee "$tmp/inline.txt"
median() { grep ' total ' "$1" | awk '{print $3}' | sort -n |
           awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median per evaluation: single (cold) $(median "$tmp/single.txt") s, batch (fresh compile) $(median "$tmp/batch.txt") s, cached $(median "$tmp/cached.txt") s, load_inline $(median "$tmp/inline.txt") s"
