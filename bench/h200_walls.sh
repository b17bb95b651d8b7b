#!/usr/bin/env bash
# Evaluation wall time on the H200, two builds side by side in one device call: the binary of
# .carry/bin/kforge (this tree) and .carry/old/bin/kforge with its own KFORGE_HOME
# (.carry/old/home: the runner and templates of the commit it was built from). For each build:
# the honest ReLU (level1#19 at 16x1024) and the honest tiled GEMM (level1#2 at 1024^3), each
# `kforge eval --time` once with a fresh compile (a new comment in the source) and once more on
# the same file (compile-cache hit), alternating old and new so that drift hits both alike.
# Repeats: WALL_REPEATS (default 3). Prints a table of medians last; raw lines in $OUT/walls.txt.
set -uo pipefail
source "$(dirname "$0")/h200_env.sh"
cd "$ROOT"
REPEATS=${WALL_REPEATS:-3}
declare -A TASK=([relu]="kernelbench:level1#19" [gemm]="kernelbench:level1#2")
declare -A SIZE=([relu]="--set batch_size=16 --set dim=1024"
                 [gemm]="--set M=1024 --set K=1024 --set N=1024")
declare -A SRC=([relu]=tests/fixtures/candidates/relu/honest.cu
                [gemm]=tests/fixtures/candidates/matmul/honest.cu)
one() {  # build kernel index
  local build=$1 kernel=$2 i=$3 bin home
  if [ "$build" = old ]; then bin=$ROOT/.carry/old/bin/kforge; home=$ROOT/.carry/old/home
  else bin=$ROOT/.carry/bin/kforge; home=$ROOT; fi
  [ -x "$bin" ] || return 0
  local src="$OUT/walls-$build-$kernel-$i.cu"
  { cat "${SRC[$kernel]}"; echo "// fresh $build $kernel $i $RANDOM$RANDOM"; } > "$src"
  for phase in fresh cached; do
    local t0 t1 status
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    KFORGE_HOME=$home timeout 300 "$bin" eval ${TASK[$kernel]} "$src" ${SIZE[$kernel]} --target nvidia/cuda --time \
      --json --no-store > "$OUT/walls-$build-$kernel-$i-$phase.json" \
      2> "$OUT/walls-$build-$kernel-$i-$phase.log"
    t1=$(date +%s.%N)
    status=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['status'])" \
      "$OUT/walls-$build-$kernel-$i-$phase.json" 2>/dev/null || echo none)
    echo "$build $kernel $phase $(python3 -c "print(f'{$t1-$t0:.2f}')") $status" >> "$OUT/walls.txt"
  done
}
: > "$OUT/walls.txt"
for i in $(seq 1 "$REPEATS"); do
  for kernel in relu gemm; do one old $kernel $i; one new $kernel $i; done
done
python3 - "$OUT/walls.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    build, kernel, phase, secs, status = line.split()
    rows.setdefault((kernel, phase, build), []).append((float(secs), status))
print("\n| evaluation (kforge eval --time, wall) | old build | new build | new/old |")
print("|---|---|---|---|")
for kernel in ("relu", "gemm"):
    for phase in ("fresh", "cached"):
        old = rows.get((kernel, phase, "old"), [])
        new = rows.get((kernel, phase, "new"), [])
        def med(v):
            return statistics.median(s for s, _ in v) if v else None
        def cell(v):
            m = med(v)
            if m is None:
                return "n/a"
            return f"{m:.2f} s ({min(s for s,_ in v):.2f}-{max(s for s,_ in v):.2f}; " \
                   f"{','.join(sorted(set(st for _, st in v)))})"
        ratio = f"{med(new) / med(old):.2f}" if old and new else "n/a"
        print(f"| {kernel} {phase} | {cell(old)} | {cell(new)} | {ratio} |")
PY
