#!/usr/bin/env bash
# The evaluation harness on an NVIDIA H200: the fixtures on nvidia/cuda, nvidia/triton and nvidia/opencl through
# the real harness, then bench/eval_speed.sh. Expects what bench/RESULTS.md describes under .carry/
# (kforge, fixtures_gpu_test, bwrap, the spdlog/toml++ libraries of Debian 12, the KernelBench
# JSONL) and pyopencl's wheels under .whl/. Writes logs to $OUT (or ./out).
set -uo pipefail
source bench/h200_env.sh
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
  python3 -c "import torch, triton, pyopencl; print('torch', torch.__version__, 'triton', triton.__version__, 'pyopencl', pyopencl.VERSION_TEXT)"
  kforge targets
} 2>&1 | tee "$OUT/environment.txt"
# SPEED_N / SPEED_M size the speed runs; FIXTURES_CUDA_TRITON=0 skips those fixtures.
fixtures() {  # fixtures NAME FILTER
  KFORGE_FIXTURE_WHERE=h200 fixtures_gpu_test --gtest_filter="$2" 2>&1 |
    grep -vE '^\[ +(RUN|OK) ' > "$OUT/fixtures_$1.log"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |evaluate:' "$OUT/fixtures_$1.log" | tail -40
}
fixtures opencl '*nvidia_opencl*'
KFORGE=kforge bench/eval_speed.sh "${SPEED_N:-7}" "${SPEED_M:-2}" 2>&1 | tee "$OUT/eval_speed.txt"
[ "${FIXTURES_CUDA_TRITON:-1}" = 1 ] && fixtures cuda_triton '*nvidia_cuda*:*nvidia_triton*'
