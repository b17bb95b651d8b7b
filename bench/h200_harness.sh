#!/usr/bin/env bash
# The Python harness (runner/HARNESS.md, `python3 -m kforge_runner --harness`) on the H200, with
# Python parents (no C++ build needed). Two parts, each inside one device call (< 10 min):
#
#   OUT=... bash bench/h200_harness.sh           # CUDA tests, cost per sample, Triton/CuTe fixtures
#   OUT=... bash bench/h200_harness.sh baselines # eager/compile baselines: harness vs v1 timing
#
# CuTe DSL: if wheels lie in /tmp/cute or /tmp/cute-wheels (nvidia-cutlass-dsl 4.8.1 and its
# -libs-base, -libs-cu13), they are installed into /tmp/site and every
# tests/fixtures/candidates/*/*.cute.py runs through the harness; otherwise that step is skipped.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT/runner:$ROOT/runner/tests${PYTHONPATH:+:$PYTHONPATH}
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then  # pyopencl, as the other H200 scripts
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
export KFORGE_KERNELBENCH_DIR=${KFORGE_KERNELBENCH_DIR:-$ROOT/.carry/kernelbench}
[ -d "$KFORGE_KERNELBENCH_DIR" ] || export KFORGE_KERNELBENCH_DIR=/work/shared/data/kernelbench
CUTE=""
for d in /tmp/cute /tmp/cute-wheels; do
  if ls "$d"/nvidia_cutlass_dsl*.whl >/dev/null 2>&1; then CUTE=$d; fi
done
if [ -n "$CUTE" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$CUTE"/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])" \
  | tee -a "$OUT/gpu.txt"

step() {  # step NAME SECONDS COMMAND...: runs with a time limit, log copied to $OUT as it goes
  local name=$1 limit=$2; shift 2
  echo "== $name" | tee -a "$OUT/summary.txt"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "exit $?" >> "$OUT/$name.log"
  tail -n 25 "$OUT/$name.log" | tee -a "$OUT/summary.txt"
}

PART=${1:-fixtures}
if [ "$PART" = fixtures ]; then
# 1. The harness's CUDA tests: clocks, graph, empty samples, freed-memory poison, Event patch,
#    late thread work, timing recognisers, side stream, the three reference variants.
step cuda_tests 170 python3 -m pytest -q -s -p no:cacheprovider runner/tests/test_harness_cuda.py
# 2. Cost per sample on the GPU (channel + arena + checks), module and empty.
step round_trip 60 python3 bench/harness_round_trip.py --device cuda --samples 300 --runs 3
# 3. nvidia/triton fixtures (honest and red team) through the harness.
step triton_relu 110 python3 bench/harness_fixture.py --task relu --samples 40 \
  tests/fixtures/candidates/relu/honest.triton.py tests/fixtures/redteam/stream_side.triton.py \
  tests/fixtures/redteam/reference_op_relu.py tests/fixtures/redteam/exception_fallback.py \
  tests/fixtures/redteam/dynamic/stale_output_empty.py tests/fixtures/redteam/dynamic/lazy_output.py \
  tests/fixtures/redteam/dynamic/pointer_cache.py tests/fixtures/redteam/dynamic/timer_patch_event.py \
  tests/fixtures/redteam/dynamic/thread_late_write.py tests/fixtures/redteam/dynamic/timed_call_counter.py \
  tests/fixtures/redteam/dynamic/timed_inputs_seen.py tests/fixtures/redteam/honest/call_counter.py \
  tests/fixtures/redteam/honest/persistent_output.py
step triton_others 80 bash -c 'for t in softmax matmul rmsnorm; do
  python3 bench/harness_fixture.py --task $t --samples 20 tests/fixtures/candidates/$t/honest.triton.py \
    $( [ $t = matmul ] && echo tests/fixtures/redteam/precision_tf32.triton.py ) | tail -n 3; done'
# 4. CuTe DSL candidates, where the wheels were carried.
if [ -n "$CUTE" ] && ls tests/fixtures/candidates/*/*.cute.py >/dev/null 2>&1; then
  step cute 80 bash -c 'for f in tests/fixtures/candidates/*/*.cute.py; do
    t=$(basename $(dirname $f)); python3 bench/harness_fixture.py --task $t --samples 20 $f | tail -n 2; done'
else
  echo "== cute: skipped (no wheels in /tmp/cute or /tmp/cute-wheels, or no *.cute.py fixture)" \
    | tee -a "$OUT/summary.txt"
fi
fi
if [ "$PART" = baselines ]; then
# 5. Baselines: the harness (parent-driven, CI-of-median stop) vs the v1 in-process timing.
step baselines 330 python3 bench/harness_baselines.py --device cuda:0 --cap 3 \
  --variants eager,compile --out "$OUT/baselines.json"
step baselines_autotune 200 python3 bench/harness_baselines.py --device cuda:0 --cap 3 \
  --tasks gemm_2048,relu_decode --variants compile-max-autotune --out "$OUT/baselines_autotune.json"
fi
echo "done $PART" | tee -a "$OUT/summary.txt"
