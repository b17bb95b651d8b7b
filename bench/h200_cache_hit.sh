#!/usr/bin/env bash
# The compile-cache hit on an NVIDIA H200, in one device call (about 1 minute): the time to
# evaluate a CUDA candidate whose compile is a cache hit (ReLU 1024 x 4096 fp32, 5 trials,
# `bench/cache_hit.sh`), with the work folders under $TMPDIR's default (/tmp) and under /dev/shm,
# each with the verdicts' step breakdown. Same set-up as the other H200 scripts
# (bench/h200_env.sh: .carry/ with a kforge built from this tree, .whl/). Knob: HITS (default 7).
# Prints the medians; the verdicts land in $OUT/cache_hit_*.json, the text in $OUT/cache_hit.txt.
set -uo pipefail
source bench/h200_env.sh
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  df -h /tmp /dev/shm
  nproc
  for where in tmp shm; do
    root=/tmp/kforge-hit-tmp
    [ "$where" = shm ] && root=/dev/shm/kforge-hit-shm
    mkdir -p "$root"
    echo "== work folders under $root"
    TMPDIR=$root KFORGE=kforge KEEP_JSON="$OUT/cache_hit_$where.json" \
      bash bench/cache_hit.sh "${HITS:-7}"
    rm -rf "$root"
  done
} 2>&1 | tee "$OUT/cache_hit.txt"
