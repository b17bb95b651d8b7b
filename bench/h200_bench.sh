#!/usr/bin/env bash
# `kforge bench` on an H200: `kforge bench` over the 37 KernelBench level-2 GEMM tasks with a
# replayed conversation, against a serial loop of the same evaluations.
#
#   bench/h200_bench.sh CASSETTE [MODEL_ID] [ITERATIONS]
#
# CASSETTE: the recorded conversation (record it once with
#   kforge bench examples/suites/level2-gemm.toml --target nvidia-h200/cuda --model M --record C).
# MODEL_ID: the model id the cassette was recorded with (default: the first model_id in it).
# ITERATIONS: as recorded (default 3).
# Prints both wall times; the bench's run directory is kept for `kforge report`.
# Needs: build/dev (or $KFORGE) kforge, nvcc, the runner's Python with CUDA torch ($KFORGE_PYTHON).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kforge=${KFORGE:-$here/build/dev/src/cli/kforge}
cassette=$(realpath "${1:?usage: bench/h200_bench.sh CASSETTE [MODEL_ID] [ITERATIONS]}")
model=${2:-$(sed -n 2p "$cassette" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["model_id"])')}
iterations=${3:-3}
suite=$here/examples/suites/level2-gemm.toml
target=nvidia-h200/cuda
out=${OUT:-$here/kforge-runs/h200-gemm-$(date -u +%Y%m%d-%H%M%S)}

nvidia-smi -L || true
echo "== kforge bench ($model, $iterations iteration(s), replay $cassette) -> $out"
t0=$(date +%s.%N)
set +e
"$kforge" bench "$suite" --target "$target" --model "$model" --iterations "$iterations" \
  --replay "$cassette" --replay-match numbers --out "$out" | tee "$out.bench.log" | grep -v '^\[' 
bench_rc=${PIPESTATUS[0]}
set -e
t1=$(date +%s.%N)
bench_s=$(python3 -c "print(f'{$t1 - $t0:.1f}')")

echo "== serial loop: the same candidates, one kforge eval per task, one task after another"
# Every evaluated candidate of the bench, grouped by task (problem id from the task name).
sqlite3 -separator ' ' "$out/run.sqlite" "
  SELECT DISTINCT t.name, c.id FROM evaluations e
  JOIN candidates c ON c.id = e.candidate_id JOIN tasks t ON t.id = c.task_id
  ORDER BY t.name, c.sample, c.iteration" > "$out.candidates.txt"
t2=$(date +%s.%N)
serial_evals=0
for name in $(cut -d' ' -f1 "$out.candidates.txt" | sort -u); do
  id=${name%%_*}
  files=()
  for cand in $(awk -v n="$name" '$1 == n {print $2}' "$out.candidates.txt"); do
    files+=("$(ls "$out/candidates/$cand"/* | head -1)")
  done
  serial_evals=$((serial_evals + ${#files[@]}))
  "$kforge" eval "kernelbench:level2#$id" "${files[@]}" --target "$target" --time --no-store \
    > /dev/null 2>&1 || true
done
t3=$(date +%s.%N)
serial_s=$(python3 -c "print(f'{$t3 - $t2:.1f}')")

echo
echo "bench (exit $bench_rc): $bench_s s wall, 37 tasks, LLM from the cassette, run $out"
echo "serial loop: $serial_s s wall, $serial_evals evaluations (kforge eval per task, in a row)"
python3 -c "print(f'speedup of the bench over the serial loop: {$serial_s / $bench_s:.2f}x')"
echo "report: kforge report $out"
