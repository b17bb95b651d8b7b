#!/usr/bin/env bash
# One device call on a two-H200 host (bench/RESULTS.md): the runner's second-GPU test, then
# `PART=one-gpu bench/h200x2_gemm.sh` — the one-GPU bench on GPU 0 while the serial loop of the
# same evaluations runs on GPU 1. The serial loop takes its candidates from the earlier two-GPU
# run carried in .carry/x1-two-gpus (the same answers of the same cassette).
set -uo pipefail
source bench/h200_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/ptwhl/*.whl
(cd runner && timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py) 2>&1 \
  | tail -3 | tee $OUT/pytest_cuda.txt
PART=one-gpu BENCH_TIMEOUT=${BENCH_TIMEOUT:-545} SERIAL_BUDGET_S=${SERIAL_BUDGET_S:-530} \
  bash bench/h200x2_gemm.sh .carry/conv/gemm.jsonl .carry/x1-two-gpus
