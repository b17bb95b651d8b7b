#!/usr/bin/env bash
# A compile beside a timing (docs/trust.md "No compile beside a timing"), on a CPU machine.
#
# The candidate tests/fixtures/redteam/dynamic/compile_burn.cpp is the honest relu plus a compile
# that keeps g++ busy for ~12 s. Three experiments, each with the binary before the host gate
# (KFORGE_BEFORE) and after it (KFORGE_AFTER), cpu/cpp, the ci-cpu relu, `kforge eval --time`:
#   same     one evaluation of the burner: its own compile runs while its reference phase times
#            the eager baseline (before) or first (after); compared with the honest twin's speedup.
#   compile-first  another evaluation's burner compile starts, then the honest relu is timed.
#   timing-first   the honest relu starts timing, then the burner's compile starts.
# Reported: the honest (or burner) evaluation's eager median and speedup, and wall times.
#
#   KFORGE_BEFORE=/work/main/build/dev/src/cli/kforge KFORGE_AFTER=build/dev/src/cli/kforge \
#     bash bench/sandbox_overlap.sh          # ROUNDS=3 by default; OUT=dir for the files
# SIDES=before (or after) runs one binary only; KFORGE_BEFORE_HOME is its KFORGE_HOME (the
# runner package it was built with), else this tree.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out/sandbox_overlap}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
SIDES=${SIDES:-before after}  # or only one of them
BEFORE=${KFORGE_BEFORE:-}
AFTER=${KFORGE_AFTER:-}

HONEST=$ROOT/tests/fixtures/candidates/relu/honest.cpp
BURN=$ROOT/tests/fixtures/redteam/dynamic/compile_burn.cpp
export KFORGE_CACHE_DIR=$OUT/cache  # compile cache per experiment run; baselines too
: > "$OUT/results.txt"

fresh() {  # a copy of $1 that no cache has seen
  local f="$OUT/$(basename "$1" .cpp)_$RANDOM$RANDOM.cpp"
  { cat "$1"; echo "// fresh $RANDOM$RANDOM"; } > "$f"
  echo "$f"
}

evaluate() {  # $1 binary, $2 candidate, $3 json out; timed, no store
  "$1" eval kernelbench:level1#19 "$2" --set batch_size=16 --set dim=1024 --target cpu/cpp --time --json --no-store > "$3" 2> "$3.log"
}

summary() {  # $1 label, $2 json
  python3 - "$1" "$2" >> "$OUT/results.txt" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
try:
    v = json.load(open(path))
    t = v.get("timing") or {}
    eager = (t.get("eager_baseline") or {}).get("median_s")
    cand = (t.get("candidate") or {}).get("median_s")
    load = (t.get("load") or {})
    print(f"{label} status={v['status']} eager_us={eager*1e6 if eager else float('nan'):.2f} "
          f"cand_us={cand*1e6 if cand else float('nan'):.2f} "
          f"speedup={t.get('speedup_vs_eager') or float('nan'):.3f} total_s={v['seconds']['total']:.1f} "
          f"compile_s={v['seconds']['compile']:.1f} load_busy={load.get('busy')}")
except Exception as e:  # noqa: BLE001
    print(f"{label} no verdict: {e}")
PY
}

for round in $(seq 1 "$ROUNDS"); do
  for which in $SIDES; do
    bin=$BEFORE; [ "$which" = after ] && bin=$AFTER
    export KFORGE_HOME=$ROOT
    [ "$which" = before ] && [ -n "${KFORGE_BEFORE_HOME:-}" ] && export KFORGE_HOME=$KFORGE_BEFORE_HOME
    # same: the burner alone, then its honest twin alone.
    evaluate "$bin" "$(fresh "$BURN")" "$OUT/same_burn_${which}_$round.json"
    summary "same/$which/burner" "$OUT/same_burn_${which}_$round.json"
    evaluate "$bin" "$(fresh "$HONEST")" "$OUT/same_honest_${which}_$round.json"
    summary "same/$which/honest" "$OUT/same_honest_${which}_$round.json"
    # compile-first: the burner's evaluation starts; 1 s later the honest relu's.
    start=$(date +%s.%N)
    evaluate "$bin" "$(fresh "$BURN")" "$OUT/cf_burn_${which}_$round.json" &
    bg=$!
    sleep 1
    evaluate "$bin" "$(fresh "$HONEST")" "$OUT/cf_honest_${which}_$round.json"
    wait "$bg"
    echo "compile-first/$which both_wall_s=$(python3 -c "import time;print(f'{time.time()-$start:.1f}')")" >> "$OUT/results.txt"
    summary "compile-first/$which/honest" "$OUT/cf_honest_${which}_$round.json"
    # timing-first: the honest relu's evaluation starts (a cached compile: its reference phase
    # times at once); 1.5 s later the burner's evaluation (its compile) starts.
    evaluate "$bin" "$HONEST" /dev/null  # warm the honest compile into the cache
    start=$(date +%s.%N)
    evaluate "$bin" "$HONEST" "$OUT/tf_honest_${which}_$round.json" &
    bg=$!
    sleep 1.5
    evaluate "$bin" "$(fresh "$BURN")" "$OUT/tf_burn_${which}_$round.json"
    wait "$bg"
    echo "timing-first/$which both_wall_s=$(python3 -c "import time;print(f'{time.time()-$start:.1f}')")" >> "$OUT/results.txt"
    summary "timing-first/$which/honest" "$OUT/tf_honest_${which}_$round.json"
  done
done
python3 - "$OUT/results.txt" <<'PY'
import re, statistics, sys
rows = {}
walls = {}
for line in open(sys.argv[1]):
    label = line.split()[0]
    m = re.search(r"speedup=([\d.]+)", line)
    e = re.search(r"eager_us=([\d.]+)", line)
    w = re.search(r"both_wall_s=([\d.]+)", line)
    if m and e:
        rows.setdefault(label, []).append((float(m.group(1)), float(e.group(1))))
    if w:
        walls.setdefault(label, []).append(float(w.group(1)))
print("| experiment | speedup vs eager (median) | eager median us (median) | n |")
print("|---|---|---|---|")
for label in sorted(rows):
    s = [x for x, _ in rows[label]]
    e = [y for _, y in rows[label]]
    print(f"| {label} | {statistics.median(s):.2f} | {statistics.median(e):.1f} | {len(s)} |")
for label in sorted(walls):
    print(f"| {label} wall for both evaluations | {statistics.median(walls[label]):.1f} s | | {len(walls[label])} |")
PY
