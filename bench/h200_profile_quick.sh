#!/usr/bin/env bash
# The ncu half of bench/h200_profile.sh (plus the torch trace of the launch-bound case), packed
# into one archive: $OUT/profile-fixtures.tgz. For a short device budget.
set -uo pipefail
OUT=${OUT:-$PWD/out}
export PATH=$PATH:/usr/local/cuda/bin
C=tests/fixtures/profile/candidates
F=/tmp/profile-fixtures
CASES="launch_bound:add_one_task bank_conflicts:transpose_task memory_coalesced:scale_task uncoalesced:scale_task compute_bound:iterate_task register_pressure:iterate_task"
for case in $CASES; do
  name=${case%%:*}; task=$C/${case#*:}.py; cand=$C/$name.cu; dir=$F/$name
  mkdir -p "$dir"
  kforge profile "$task" "$cand" --target nvidia/cuda --tool ncu --raw --out "$dir/ncu" > /dev/null 2> "$dir/ncu.err"
  for f in ncu.raw.csv ncu.details.csv; do [ -f "$dir/ncu/$f" ] && cp "$dir/ncu/$f" "$dir/$f"; done
  if [ "$name" = launch_bound ]; then
    kforge profile "$task" "$cand" --target nvidia/cuda --tool torch --calls 3 --raw --out "$dir/torch" > /dev/null 2> "$dir/torch.err"
    [ -f "$dir/torch/torch.json" ] && cp "$dir/torch/torch.json" "$dir/torch.json"
  fi
  rm -rf "$dir/ncu" "$dir/torch"
  kforge profile --from "$dir" --tool ncu > "$dir/summary.txt" 2>&1
  echo "=== $name: $(grep -E '^dominant bottleneck' "$dir/summary.txt")"
  tar -czf "$OUT/profile-fixtures.tgz" -C /tmp profile-fixtures
done
