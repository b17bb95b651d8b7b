#!/usr/bin/env bash
# `kforge profile` for real on this machine: OpenCL event profiling on PoCL (cpu/opencl), the torch
# profiler around a native candidate and around the task's reference (cpu/cpp), and --raw.
# Usage: kforge_profile_test.sh KFORGE. Exits 77 (skipped) without the KernelBench data.
set -euo pipefail
KFORGE=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export KFORGE_HOME=$ROOT
DATA=${KFORGE_KERNELBENCH_DIR:-$ROOT/../shared/data/kernelbench}
if [ ! -f "$DATA/level1.jsonl" ]; then echo "SKIP: no KernelBench data at $DATA"; exit 77; fi
export KFORGE_KERNELBENCH_DIR=$DATA
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SIZES=(--set batch_size=16 --set dim=1024)
fail() { echo "FAIL: $*"; exit 1; }

"$KFORGE" profile kernelbench:level1#19 "$ROOT/tests/fixtures/candidates/relu/honest.cl.py" "${SIZES[@]}" \
  --target cpu/opencl --calls 2 --out "$OUT/ocl" > "$OUT/ocl.txt"
cat "$OUT/ocl.txt"
grep -q '^tool: opencl; device: ' "$OUT/ocl.txt" || fail "opencl summary names no tool/device"
grep -q '^100% relu x2 ' "$OUT/ocl.txt" || fail "opencl summary lacks the relu kernel's two launches"
grep -q '^dominant bottleneck: ' "$OUT/ocl.txt" || fail "no bottleneck line"
[ -s "$OUT/ocl/opencl.json" ] || fail "opencl.json not kept"

"$KFORGE" profile kernelbench:level1#19 "$ROOT/tests/fixtures/candidates/relu/honest.cpp" "${SIZES[@]}" \
  --target cpu/cpp --calls 2 --out "$OUT/cpp" > "$OUT/cpp.txt"
cat "$OUT/cpp.txt"
grep -q '^tool: torch; 2 calls profiled' "$OUT/cpp.txt" || fail "cpp summary: not 2 torch-profiled calls"
grep -q '^call wall time (host, median): ' "$OUT/cpp.txt" || fail "cpp summary lacks the call's wall time"

"$KFORGE" profile kernelbench:level2#12 --set batch_size=16 --set in_features=64 \
  --set out_features=32 --reference --target cpu/cpp --out "$OUT/ref" > "$OUT/ref.txt"
cat "$OUT/ref.txt"
grep -q 'aten::linear x3' "$OUT/ref.txt" || fail "reference summary lacks aten::linear"

"$KFORGE" profile kernelbench:level1#19 "$ROOT/tests/fixtures/candidates/relu/honest.cpp" "${SIZES[@]}" \
  --target cpu/cpp --raw --out "$OUT/raw" > "$OUT/raw.txt"
grep -q '"kforge_call"' "$OUT/raw.txt" || fail "--raw does not print the trace"

if "$KFORGE" profile kernelbench:level1#19 "$ROOT/tests/fixtures/candidates/relu/honest.cpp" "${SIZES[@]}" \
     --target cpu/cpp --tool ncu > "$OUT/bad.txt" 2>&1; then
  fail "--tool ncu on cpu/cpp was accepted"
fi
grep -q 'needs an NVIDIA CUDA target' "$OUT/bad.txt" || fail "the ncu refusal does not say why"
echo PASS
