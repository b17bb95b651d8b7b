#!/usr/bin/env bash
# The Slurm executor end to end: a one-node Slurm cluster on localhost runs a small bench
# on cpu/opencl with a replayed conversation; the same bench through the local executor gives the
# same verdicts. Exit 77 (skipped) without root, Slurm, munge or a usable cpu/opencl.
set -euo pipefail
kforge=$1
src=$2
suite=$src/tests/exec/data/opencl-tiny.toml
cassette=$src/tests/exec/data/opencl-tiny.cassette.jsonl
[[ -f $src/../shared/data/kernelbench/level1.jsonl || -n ${KFORGE_KERNELBENCH_DIR:-} ]] ||
  { echo "no KernelBench data"; exit 77; }
"$kforge" targets 2>/dev/null | grep -E '^cpu/opencl +yes' >/dev/null ||
  { echo "cpu/opencl is not usable here"; exit 77; }

work=$(mktemp -d /tmp/kforge-slurm-test.XXXXXX)
chmod 755 "$work"
cleanup() { "$src/tests/exec/slurm_cluster.sh" stop "$work/cluster" || true; rm -rf "$work"; }
trap cleanup EXIT
set +e
env_line=$("$src/tests/exec/slurm_cluster.sh" start "$work/cluster")
rc=$?
set -e
[[ $rc -eq 0 ]] || exit "$rc"
eval "$env_line"

cd "$work"
common=(--target cpu/opencl --model inbox --iterations 1 --replay "$cassette" --no-time)
"$kforge" bench "$suite" "${common[@]}" --executor slurm --poll-ms 500 --out "$work/slurm-run"
"$kforge" bench "$suite" "${common[@]}" --executor local --out "$work/local-run"

verdicts() {
  sqlite3 "$1/run.sqlite" "SELECT t.name, c.sample, c.iteration, e.status FROM evaluations e
     JOIN candidates c ON c.id = e.candidate_id JOIN tasks t ON t.id = c.task_id
     ORDER BY t.name, c.sample, c.iteration"
}
verdicts "$work/slurm-run" > slurm.txt
verdicts "$work/local-run" > local.txt
echo "slurm verdicts:"; cat slurm.txt
[[ $(wc -l < slurm.txt) -eq 3 ]] || { echo "expected 3 evaluations through Slurm"; exit 1; }
diff -u local.txt slurm.txt
for r in slurm-run local-run; do
  status=$(sqlite3 "$work/$r/run.sqlite" "SELECT status FROM runs")
  [[ $status == finished ]] || { echo "$r: run status $status"; exit 1; }
done
# The cluster refusing: a partition that does not exist is named with the fix.
set +e
out=$("$kforge" bench "$suite" "${common[@]}" --executor slurm --partition no-such-part \
      --out "$work/refused" 2>&1)
rc=$?
set -e
echo "$out" | tail -3
[[ $rc -eq 3 ]] && echo "$out" | grep -q "invalid partition" && echo "$out" | grep -q "sinfo -s"
echo "OK: Slurm and local verdicts agree"
