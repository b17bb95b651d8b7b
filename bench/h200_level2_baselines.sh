#!/usr/bin/env bash
# `kforge eval --baselines` on KernelBench level-2 GEMM tasks on the H200: #76 with the honest CUDA
# fixture, and #9, #66, #80 (the degenerate ones) with a KernelBench-style ModelNew that runs the
# reference's own PyTorch code (compatibility mode). Expects bench/h200_env.sh.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p /tmp/l2
python3 - <<'PY'
import json
for line in open(".carry/kernelbench/level2.jsonl"):
    d = json.loads(line)
    if d["problem_id"] in (9, 66, 80):
        open(f"/tmp/l2/same_as_reference_{d['problem_id']}.py", "w").write(
            d["code"] + "\n\nclass ModelNew(Model):\n    pass\n")
PY
for spec in "76 tests/fixtures/candidates/gemm_add_relu/honest.cu" "9 /tmp/l2/same_as_reference_9.py" \
            "66 /tmp/l2/same_as_reference_66.py" "80 /tmp/l2/same_as_reference_80.py"; do
  set -- $spec
  echo "== level2 #$1 with $(basename $2)"
  kforge eval kernelbench:level2#$1 $2 -t nvidia/cuda --baselines --time-max-seconds ${TMAX:-4} --no-store 2>&1 |
    grep -E "^[a-z_]+  |DEGENERATE|timing|eager|compile |speedup|physics|HELD" | cut -c1-260
done 2>&1 | tee $OUT/level2_baselines.txt
