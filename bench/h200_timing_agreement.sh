#!/usr/bin/env bash
# KForge's cold timing against Nsight Compute, and the spread of its median over 5 repeats, on the
# H200 (bench/timing_agreement.py). Writes $OUT/agreement.jsonl, $OUT/ncu.csv and a summary.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT/runner:$ROOT/bench
KERNELS=${KERNELS:-relu_64x4096,relu_1024x4096,relu_8192x8192,relu_32768x16384,matmul_1024,matmul_3072}
python3 bench/timing_agreement.py --kernels "$KERNELS" > "$OUT/agreement.jsonl" 2> "$OUT/agreement.err"
tail -3 "$OUT/agreement.err"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
  --kernel-name regex:'relu_kernel|matmul_tiled' \
  python3 bench/timing_agreement.py --ncu --kernels "$KERNELS" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
tail -3 "$OUT/ncu.err"
python3 - "$OUT" <<'PY'
import csv, json, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/agreement.jsonl") if l.startswith("{")]
lines = [l for l in open(f"{out}/ncu.csv") if l.startswith('"')]
ncu = list(csv.DictReader(lines))
# ncu rows come in launch order; 5 calls per kernel, one launch per call for these kernels.
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3}
durations = [float(r["Metric Value"].replace(",", "")) * UNIT[r["Metric Unit"]] for r in ncu
             if r["Metric Name"] == "gpu__time_duration.sum"]
scale = 1.0
print(f"{'kernel':<18} {'kforge median':>14} {'ncu median':>12} {'diff':>8} {'spread(5)':>10} {'plain events':>13}")
for i, r in enumerate(rows):
    ncu_s = statistics.median(durations[5 * i: 5 * i + 5]) * scale if len(durations) >= 5 * i + 5 else float('nan')
    k = r["median_of_medians_s"]
    print(f"{r['kernel']:<18} {k*1e6:>11.2f} us {ncu_s*1e6:>9.2f} us {100*(k-ncu_s)/ncu_s:>7.2f}% {100*r['spread']:>9.2f}% {r['warm_plain_events_s']*1e6:>10.2f} us")
PY
