#!/usr/bin/env bash
# One device call on a two-H200 host (bench/RESULTS.md): `PART=one-gpu bench/h200x2_gemm.sh` —
# the one-GPU bench on GPU 0 while the serial loop of the same evaluations runs on GPU 1. The
# serial loop takes its candidates from the two-GPU run (PART=two-gpus, an earlier call) carried
# in .carry/two-gpus (the same answers of the same cassette): unpack gemm-two-gpus.tgz and copy
# its two-gpus/ there.
set -uo pipefail
source bench/h200_env.sh
# RUN_TESTS=1: first the runner's CUDA tests (60 s on 2026-11-29; they passed then), counted in
# the call's budget.
CALL_START=$(date +%s)
if [ -n "${RUN_TESTS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/ptwhl/*.whl
  (cd runner && timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py) 2>&1 \
    | tail -3 | tee $OUT/pytest_cuda.txt
fi
used=$(( $(date +%s) - CALL_START ))
PART=one-gpu CALL_BUDGET_S=$(( ${CALL_BUDGET_S:-570} - used )) BENCH_TIMEOUT=${BENCH_TIMEOUT:-500} \
  SERIAL_BUDGET_S=${SERIAL_BUDGET_S:-490} \
  bash bench/h200x2_gemm.sh .carry/conv/gemm.jsonl ${TWO_GPU_RUN:-.carry/two-gpus}
