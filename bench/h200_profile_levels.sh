#!/usr/bin/env bash
# Profiles on an NVIDIA H200: the token bound over KernelBench level 1 and 2 references. A subset,
# to stay near 6 minutes: the torch profiler for every 10th task of each level (ids 1, 11, ...,
# 91: 20 tasks), Nsight Compute for every 20th of level 1 and every 25th of level 2 (ids 1, 21,
# 41, 61, 81 and 1, 26, 51, 76: 9 tasks, at most 20 kernels each). Stops starting new tasks after
# $BUDGET_S seconds (default 330). Writes $OUT/profile-fixtures/levels/l<L>_<N>/{torch.json,
# ncu.raw.csv,ncu.details.csv,summary*.txt} (copy to tests/fixtures/profile/h200/levels/) and a
# table of summary token counts to $OUT/profile-levels.txt.
# Set-up as bench/h200_issue2.sh (.carry/kernelbench holds the KernelBench JSONL).
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
BUDGET_S=${BUDGET_S:-330}
LEVELS=$OUT/profile-fixtures/levels
mkdir -p "$LEVELS"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site KFORGE_RUNNER_PYTHONPATH=/tmp/site
fi
export LD_LIBRARY_PATH=$ROOT/.carry/lib:${LD_LIBRARY_PATH:-}
export PATH=$ROOT/.carry/bin:$PATH:/usr/local/cuda/bin
export KFORGE_HOME=$ROOT KFORGE_KERNELBENCH_DIR=$ROOT/.carry/kernelbench
export KFORGE_PYTHON=$(command -v python3) KFORGE_CACHE_DIR=/tmp/kforge-cache
export KFORGE_NCU_LAUNCH_COUNT=20
start=$SECONDS
: > "$OUT/profile-levels.txt"
one() {  # one LEVEL ID TOOL
  local level=$1 id=$2 tool=$3 dir=$LEVELS/l$1_$2
  if (( SECONDS - start > BUDGET_S )); then echo "l$level#$id $tool: skipped (time budget)" | tee -a "$OUT/profile-levels.txt"; return; fi
  mkdir -p "$dir"
  timeout 120 kforge profile "kernelbench:level$level#$id" --reference --target nvidia/cuda \
    --tool "$tool" --calls 2 --out "$dir/$tool" > "$dir/summary-$tool.txt" 2> "$dir/$tool.err"
  local rc=$?
  for f in torch.json ncu.raw.csv ncu.details.csv; do [ -f "$dir/$tool/$f" ] && cp "$dir/$tool/$f" "$dir/$f"; done
  rm -rf "$dir/$tool"
  tokens=$(grep -o 'summary of about [0-9]* tokens' "$dir/$tool.err" | grep -o '[0-9]*')
  echo "l$level#$id $tool: exit $rc, ${tokens:-?} tokens" | tee -a "$OUT/profile-levels.txt"
}
for id in 1 11 21 31 41 51 61 71 81 91; do one 1 $id torch; one 2 $id torch; done
for id in 1 21 41 61 81; do one 1 $id ncu; done
for id in 1 26 51 76; do one 2 $id ncu; done
echo "max tokens: $(grep -o '[0-9]* tokens' "$OUT/profile-levels.txt" | sort -n | tail -1)"
