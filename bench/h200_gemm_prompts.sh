#!/usr/bin/env bash
# The first prompt of each of the 37 level-2 GEMM tasks (examples/suites/level2-gemm.toml) for
# nvidia/cuda, rendered by `kforge bench` with the inbox model on the H200 (the target must be
# present for a bench to start). Answer each NNNN-prompt.md with NNNN-answer.md, then record the
# cassette with bench/h200_gemm_bench.sh. Writes $OUT/gemm-prompts.tgz. Needs bench/h200_env.sh.
set -uo pipefail
source bench/h200_env.sh
P=/tmp/gemm-prompts; rm -rf $P; mkdir -p $P
(cd $P && timeout 300 kforge bench "$ROOT/examples/suites/level2-gemm.toml" --target nvidia/cuda \
   --model inbox --iterations 1 --out $P/run > $P/bench.txt 2>&1)
ls $P/kforge-inbox | wc -l
tar -czf "$OUT/gemm-prompts.tgz" -C $P kforge-inbox bench.txt
