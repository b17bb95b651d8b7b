#!/usr/bin/env bash
# One device call: the 37 GEMM prompts (bench/h200_gemm_prompts.sh), the two profile fixtures
# whose bottleneck needs ncu's full section set (uncoalesced, bank_conflicts: the memory-workload
# tables), and the level-1/2 token-bound sample (bench/h200_profile_levels.sh, 200 s budget).
# Everything lands in $OUT/call.tgz.
set -uo pipefail
source bench/h200_env.sh
export PATH=$PATH:/usr/local/cuda/bin
bash bench/h200_gemm_prompts.sh
C=tests/fixtures/profile/candidates; F=/tmp/pf-full
for case in uncoalesced:scale_task bank_conflicts:transpose_task; do
  name=${case%%:*}; dir=$F/$name; mkdir -p $dir
  KFORGE_NCU_SET=full timeout 150 kforge profile $C/${case#*:}.py $C/$name.cu --target nvidia/cuda --tool ncu \
    --raw --out $dir/ncu > /dev/null 2> $dir/ncu.err
  cp $dir/ncu/ncu.raw.csv $dir/ncu/ncu.details.csv $dir/ 2>/dev/null; rm -rf $dir/ncu
  kforge profile --from $dir --tool ncu > $dir/summary.txt 2>&1
  echo "=== $name: $(grep -E '^dominant bottleneck' $dir/summary.txt)"
done
OUT=/tmp/levels BUDGET_S=200 bash bench/h200_profile_levels.sh > /tmp/levels.txt 2>&1; tail -3 /tmp/levels.txt
tar -czf "$OUT/call.tgz" -C /tmp pf-full levels levels.txt
