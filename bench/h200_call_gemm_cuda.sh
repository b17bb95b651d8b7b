#!/usr/bin/env bash
# One device call on a one-GPU H200 host: the recorded nvidia/cuda conversation
# (bench/h200_conversation_cuda.sh), then the GEMM bench on one GPU with its serial loop
# (RUNS=one-gpu bench/h200x2_gemm.sh). Outputs in $OUT.
set -uo pipefail
source bench/h200_env.sh
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
bash bench/h200_conversation_cuda.sh 2>&1 | tail -12
RUNS=one-gpu BENCH_TIMEOUT=${BENCH_TIMEOUT:-240} SERIAL_BUDGET_S=${SERIAL_BUDGET_S:-200} bash bench/h200x2_gemm.sh 2>&1 | tail -12
