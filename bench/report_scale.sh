#!/usr/bin/env bash
# Times `kforge report` on a synthetic run of 100,000 candidates (1,000 tasks × 2 samples × 50
# iterations, verdict JSON shaped like docs/verdict.md, ~60-line sources that change from one
# iteration to the next). The bound: report generation < 5 s.
#   bash bench/report_scale.sh [BUILD_DIR [TASKS SAMPLES ITERATIONS]]
# BUILD_DIR defaults to build/ci (Release); the synthetic run is kept in $REPORT_SCALE_DIR
# (default /tmp/kforge-report-scale) so that a second call times the report only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build/ci}"
TASKS="${2:-1000}" SAMPLES="${3:-2}" ITERATIONS="${4:-50}"
DIR="${REPORT_SCALE_DIR:-/tmp/kforge-report-scale}"
RUN="$DIR/run-${TASKS}x${SAMPLES}x${ITERATIONS}"
cmake --build "$BUILD" --target kforge kforge_report_synth >/dev/null
if [ ! -f "$RUN/run.sqlite" ]; then
  echo "== generating $RUN (minutes: one transaction per row)"
  "$BUILD/tests/report/kforge_report_synth" "$RUN" "$TASKS" "$SAMPLES" "$ITERATIONS" | tail -1
fi
echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for formats in json,csv html,json,csv; do
  rm -rf "$DIR/out"
  /usr/bin/time -f "formats $formats: %e s wall, %U s user, %S s sys, %M KB max RSS" \
    "$BUILD/src/cli/kforge" report "$RUN" --out "$DIR/out" --format "$formats" | grep -E "read in|done in"
done
du -sh "$DIR/out" "$RUN"
