#!/usr/bin/env bash
# Times `kforge eval` end to end (compile + 5-trial correctness) for:
#   fresh   - N candidates that differ only in a comment (no compile-cache hit),
#   cached  - the same candidate again (compile-cache hit),
#   inline  - the same kernel as a KernelBench-style load_inline submission (compatibility mode).
# One line per evaluation, then medians. Defaults: nvidia/cuda, KernelBench level 1 #19 (ReLU) at
# 1024 x 4096 fp32. For a CPU smoke run:
#   TARGET=cpu/cpp CANDIDATE=tests/fixtures/candidates/relu/honest.cpp \
#   INLINE=tests/fixtures/candidates/relu/kernelbench_inline_cpp.py bench/eval_speed.sh 3 1
set -uo pipefail
N=${1:-7}          # fresh compiles
M=${2:-2}          # load_inline runs
KFORGE=${KFORGE:-build/dev/src/cli/kforge}
TARGET=${TARGET:-nvidia/cuda}
CANDIDATE=${CANDIDATE:-tests/fixtures/candidates/relu/honest.cu}
INLINE=${INLINE:-tests/fixtures/candidates/relu/kernelbench_inline_cuda.py}
TASK=kernelbench:level1#19
SIZES=(--set batch_size=1024 --set dim=4096)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# First "NAME": value whose value is a number, a word or a quoted word (not an object).
field() { grep -m1 -E "\"$1\": (\"[a-z_]*\"|[0-9a-z.e+-]+)" "$tmp/out.json" | sed -E 's/.*: "?([^",]*)"?,?/\1/'; }
measure() {  # measure LABEL FILE
  local start end
  start=$(date +%s.%N)
  "$KFORGE" eval "$TASK" "$2" --target "$TARGET" "${SIZES[@]}" --json --no-store >"$tmp/out.json"
  end=$(date +%s.%N)
  printf '%-7s wall %6.2f s  status %-13s compile %5.2f s  cache_hit %-5s reference %5.2f s  candidate %5.2f s\n' \
    "$1" "$(echo "$end - $start" | bc)" "$(field status)" "$(field compile)" \
    "$(field compile_cache_hit)" "$(field reference)" "$(field candidate)"
}
ext="${CANDIDATE##*.}"
for i in $(seq 1 "$N"); do
  cp "$CANDIDATE" "$tmp/variant_$i.$ext"
  echo "// variant $i $RANDOM$RANDOM" >>"$tmp/variant_$i.$ext"
  measure fresh "$tmp/variant_$i.$ext"
done | tee "$tmp/fresh.txt"
for i in $(seq 1 "$N"); do measure cached "$tmp/variant_1.$ext"; done | tee "$tmp/cached.txt"
for i in $(seq 1 "$M"); do measure inline "$INLINE"; done | tee "$tmp/inline.txt"
median() { awk '{print $3}' "$1" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median wall: fresh $(median "$tmp/fresh.txt") s, cached $(median "$tmp/cached.txt") s, load_inline $(median "$tmp/inline.txt") s"
