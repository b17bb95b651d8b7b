# Sourced by the bench/h200_*.sh scripts: the carried binaries and wheels (bench/RESULTS.md).
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
if [ ! -d /tmp/site/pyopencl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  chmod -R a+rX /tmp/site
fi
export PYTHONPATH=/tmp/site KFORGE_RUNNER_PYTHONPATH=/tmp/site
export LD_LIBRARY_PATH=$ROOT/.carry/lib:${LD_LIBRARY_PATH:-}
export PATH=$ROOT/.carry/bin:$PATH
export KFORGE_HOME=$ROOT KFORGE_KERNELBENCH_DIR=$ROOT/.carry/kernelbench
export KFORGE_PYTHON=$(command -v python3) KFORGE_CACHE_DIR=/tmp/kforge-cache
