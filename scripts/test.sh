#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test that this machine
# can run (CTest labels unit, integration, runner; gpu tests report themselves skipped without a
# GPU). This is the command CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
KFORGE_PRESET=ci scripts/setup-debian.sh
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# Format and naming over the changed tree (clang-format, clang-tidy's readability-identifier-naming).
scripts/lint.sh
ctest --preset ci -j "$(nproc)" -L 'unit|integration|runner|redteam' "$@"
