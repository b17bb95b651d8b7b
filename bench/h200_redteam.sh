#!/usr/bin/env bash
# The dynamic red-team suite's GPU cases (tests/fixtures/redteam/dynamic.toml, where = "h200";
# docs/redteam.md) on an NVIDIA H200, through fixtures_gpu_test. Same set-up as
# bench/h200_issue2.sh (.carry/ with kforge, fixtures_gpu_test, bwrap, the libraries and the
# KernelBench JSONL; pyopencl and friends under .whl/). Writes $OUT/redteam_gpu.log (or ./out).
# Every case must pass: each exploit rejected or flagged for its reason, each honest one correct.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site KFORGE_RUNNER_PYTHONPATH=/tmp/site
fi
export LD_LIBRARY_PATH=$ROOT/.carry/lib:${LD_LIBRARY_PATH:-}
export PATH=$ROOT/.carry/bin:$PATH
export KFORGE_HOME=$ROOT KFORGE_KERNELBENCH_DIR=${KFORGE_KERNELBENCH_DIR:-$ROOT/.carry/kernelbench}
export KFORGE_PYTHON=${KFORGE_PYTHON:-$(command -v python3)} KFORGE_CACHE_DIR=/tmp/kforge-cache
KFORGE_FIXTURE_WHERE=h200 fixtures_gpu_test --gtest_filter='*redteam_*' 2>&1 |
  grep -vE '^\[ +RUN ' > "$OUT/redteam_gpu.log"
grep -E '^\[ +(OK|FAILED|PASSED|SKIPPED) |evaluate:' "$OUT/redteam_gpu.log" | tail -60
grep -q '^\[  FAILED  \]' "$OUT/redteam_gpu.log" && exit 1
exit 0
