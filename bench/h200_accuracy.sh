#!/usr/bin/env bash
# The precision contract and the shortcut-finding trials on an NVIDIA H200 (docs/verdict.md
# "Precision", eval/trial_plan.h). Set-up: bench/h200_env.sh (.carry/ with kforge,
# fixtures_gpu_test, bwrap, the libraries and the KernelBench JSONL; wheels under .whl/).
# Everything goes to $OUT (or ./out); a short table is printed last. Budget: under 6 minutes
# (each step has its own timeout, and the later steps are skipped once 5 minutes have passed).
#
# 1. fixtures_gpu_test, tests/fixtures/accuracy/accuracy.toml's h200 cases (3 shards at once):
#    wrong kernels judged wrong for their reason (bit-trick exp -> float64 truth; no max
#    subtraction -> the scaled trial, CUDA and Triton; HingeLoss reading 40 % -> sorted; fixed
#    64x4096 -> shape; TF32 wmma, bf16 wmma, Triton tf32 and bf16 dots -> float64 truth), right
#    ones correct (3xTF32 wmma and Triton tf32x3 under strict, bf16 add+RMSNorm in CUDA and
#    Triton, the scalar HingeLoss not degenerate, TF32 wmma under --policy tf32).
# 2. GEMM 4096^3 (KernelBench level 1 #1, N = 4096), each candidate timed against cuBLAS-backed
#    eager (torch.matmul) in the same evaluation: split precision (3xTF32 wmma, Triton tf32x3)
#    must be correct under strict; plain TF32 wmma, bf16 wmma and Triton tf32 must not be (their
#    worst error ratio against the float64 truth is printed; strict allows 64).
# 3. The per-evaluation cost of the new trials and the float64 truth (no timing): ReLU
#    (4096 x 16384), a GEMM (N = 2048, the 3xTF32 kernel) and a decode-size task (gpt-oss
#    add+RMSNorm, batch 1), each evaluated with everything and with --no-shortcut-trials
#    --no-truth (the trials of before); wall seconds and the reference phase's.
set -uo pipefail
source "$(dirname "$0")/h200_env.sh"
START=$(date +%s)
left() { echo $(( 300 - ($(date +%s) - START) )); }  # seconds left of the 5-minute budget
date -u | tee "$OUT/accuracy_env.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/accuracy_env.txt"
C=tests/fixtures/candidates

# 1. The fixtures, in three shards at once (compiling dominates; no timing in these cases).
for i in 0 1 2; do
  KFORGE_FIXTURE_WHERE=h200 GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 170 \
    fixtures_gpu_test --gtest_filter='*accuracy_*' > "$OUT/accuracy_fixtures_$i.log" 2>&1 &
done
wait
cat "$OUT"/accuracy_fixtures_?.log | grep -vE '^\[ +RUN ' > "$OUT/accuracy_fixtures.log"

# 2. The GEMM against cuBLAS-backed eager, in the same run as each candidate.
gemm() {  # name target candidate [extra args]
  local name=$1 target=$2 cand=$3; shift 3
  [ "$(left)" -gt 20 ] || { echo "skipped: out of time" > "$OUT/gemm_$name.log"; return; }
  timeout 60 kforge eval kernelbench:level1#1 "$cand" --target "$target" --set N=4096 \
    --time --time-max-seconds 5 --json --no-store "$@" > "$OUT/gemm_$name.json" 2> "$OUT/gemm_$name.log"
}
gemm cuda_split_3xtf32_wmma nvidia-h200/cuda $C/matmul/split_3xtf32.cu
gemm triton_tf32x3 nvidia-h200/triton $C/matmul/split_tf32x3.triton.py
gemm cuda_tf32_wmma nvidia-h200/cuda $C/matmul/tf32_wmma.cu
gemm cuda_bf16_wmma nvidia-h200/cuda $C/matmul/bf16_wmma.cu
gemm triton_tf32 nvidia-h200/triton $C/matmul/tf32.triton.py

# 3. The cost of the new trials and the truth, per evaluation.
cost() {  # label task candidate [set...]
  local label=$1 task=$2 cand=$3; shift 3
  for mode in new old; do
    [ "$(left)" -gt 15 ] || { echo "skipped: out of time" > "$OUT/cost_${label}_$mode.log"; continue; }
    local extra=()
    [ "$mode" = old ] && extra=(--no-shortcut-trials --no-truth)
    timeout 60 kforge eval "$task" "$cand" --target nvidia-h200/cuda --json --no-store "$@" \
      "${extra[@]}" > "$OUT/cost_${label}_$mode.json" 2> "$OUT/cost_${label}_$mode.log"
  done
}
cost relu kernelbench:level1#19 $C/relu/honest.cu --set batch_size=4096 --set dim=16384
cost gemm kernelbench:level1#1 $C/matmul/split_3xtf32.cu --set N=2048
cost decode examples/tasks/gptoss_decode/add_rmsnorm.py $C/add_rmsnorm_bf16/honest.cu --set batch_size=1
echo "total $(( $(date +%s) - START )) s" >> "$OUT/accuracy_env.txt"

python3 - "$OUT" <<'PY' | tee "$OUT/accuracy_summary.txt"
import glob, json, os, re, sys
out = sys.argv[1]
log = open(os.path.join(out, "accuracy_fixtures.log")).read()
ok = sorted(set(re.findall(r"^\[       OK \] \S+/(\S+)", log, re.M)))
failed = sorted(set(re.findall(r"^\[  FAILED  \] \S+/(\S+?)(?:,|$)", log, re.M)))
skipped = sorted(set(re.findall(r"^\[  SKIPPED \] \S+/(\S+)", log, re.M)))
print(f"fixtures (accuracy.toml, h200): {len(ok)} ok, {len(failed)} failed, {len(skipped)} skipped")
for f in failed:
    print("  FAILED", f)
def load(path):
    try:
        return json.load(open(path))
    except Exception as e:
        return {"status": f"no verdict ({type(e).__name__})"}
def ms(x):
    return f"{x * 1e3:.3f} ms" if isinstance(x, (int, float)) else "-"
print(f"\n{'GEMM 4096^3, strict':26s} {'status':10s} {'worst ratio':>11s} {'median':>10s} "
      f"{'eager':>10s} {'speedup':>8s}")
for path in sorted(glob.glob(os.path.join(out, "gemm_*.json"))):
    v = load(path); t = v.get("timing") or {}
    ratio = (v.get("precision") or {}).get("worst_error_ratio")
    if ratio is None:  # a mismatch: the worst trial's ratio
        ratios = [x.get("error_ratio") for x in v.get("trials", []) if x.get("error_ratio")]
        ratio = max(ratios) if ratios else None
    sp = t.get("speedup_vs_eager")
    print(f"{os.path.basename(path)[5:-5]:26s} {v.get('status', '?'):10s} "
          f"{(f'{ratio:.3g}' if isinstance(ratio, (int, float)) else '-'):>11s} "
          f"{ms((t.get('candidate') or {}).get('median_s')):>10s} "
          f"{ms((t.get('eager_baseline') or {}).get('median_s')):>10s} "
          f"{(f'{sp:.2f}x' if sp else '-'):>8s}")
print(f"\n{'cost per evaluation':20s} {'all trials+truth':>17s} {'before':>8s} {'ratio':>6s} "
      f"{'reference s':>14s} {'trials':>7s}  statuses")
for label in ("relu", "gemm", "decode"):
    new, old = (load(os.path.join(out, f"cost_{label}_{m}.json")) for m in ("new", "old"))
    tn, to = ((v.get("seconds") or {}).get("total") for v in (new, old))
    rn, ro = ((v.get("seconds") or {}).get("reference") for v in (new, old))
    r = f"{tn / to:.2f}" if tn and to else "-"
    f = lambda x: f"{x:.2f}" if isinstance(x, (int, float)) else "-"
    print(f"{label:20s} {f(tn):>15s} s {f(to):>6s} s {r:>6s} {f(rn) + ' / ' + f(ro):>14s} "
          f"{len(new.get('trials', [])):>3d}/{len(old.get('trials', [])):<3d}  "
          f"{new.get('status')} / {old.get('status')}")
PY
grep -q '^\[  FAILED  \]' "$OUT/accuracy_fixtures.log" && exit 1
exit 0
