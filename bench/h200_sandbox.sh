#!/usr/bin/env bash
# The compiler in the sandbox and load awareness on an NVIDIA H200 (docs/trust.md): what the CPU
# machine cannot show.
#
#   1. nvcc in the sandbox: `compile_sandbox_test` on the .cu cases — an honest candidate compiles
#      in the toolchain-only view (CUDA 13.0 at /usr/local/cuda, Ubuntu's gcc as nvcc's host
#      compiler, found by asking them), and `#include`/`.incbin` of a canary outside the view
#      (world-readable under /var/tmp, root-only in /root) fail with the canary nowhere.
#   2. The view itself: the paths shown to nvcc there (KFORGE_LOG=debug names the count; the
#      test log has the isolation line).
#   3. Compile time of a fresh nvcc compile with and without the sandbox (KFORGE_SANDBOX=none),
#      five of each, alternating: the sandbox's cost.
#   4. NVML load reading: `kforge eval --time` of the honest ReLU on nvidia/cuda, quiet and then
#      beside a second process that keeps the GPU busy (a torch matmul loop): `timing.load.busy`
#      false then true, with the other process's SM utilisation.
#
# Set-up as bench/h200_redteam.sh: .carry/bin holds kforge, compile_sandbox_test and bwrap (the
# H200 has no bubblewrap), .carry/lib the libraries. Everything goes to $OUT (or ./out); the last
# lines are a short table. About 3-5 minutes.
set -uo pipefail
source "$(dirname "$0")/h200_env.sh"
cd "$ROOT"
RELU=tests/fixtures/candidates/relu/honest.cu


echo "== bwrap: $(command -v bwrap) $(bwrap --version 2>&1)" | tee "$OUT/sandbox_env.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/sandbox_env.txt" 2>&1

# 1-2. The compile sandbox's test, .cu cases and the view rules.
KFORGE_LOG=debug timeout 400 compile_sandbox_test --gtest_filter='*/cu:ToolchainView*' \
  > "$OUT/compile_sandbox_cu.log" 2>&1
CANARY_RC=$?
grep -E '^\[ +(OK|FAILED|SKIPPED) ' "$OUT/compile_sandbox_cu.log"
grep -m1 -oE 'toolchain view of [^ ]+: [0-9]+ paths in [0-9.]+ s' "$OUT/compile_sandbox_cu.log" \
  > "$OUT/view.txt" || true

# 3. A fresh compile (a new comment each time), sandboxed and not, alternating.
compile_once() {  # $1: label, $2: sandbox (bubblewrap|none), $3: index
  local src="$OUT/relu_$1_$3.cu"
  { cat "$RELU"; echo "// fresh compile $1 $3 $RANDOM$RANDOM"; } > "$src"
  KFORGE_SANDBOX=$2 timeout 200 kforge eval kernelbench:level1#19 "$src" --set batch_size=16 --set dim=1024 --target nvidia/cuda --json \
    --no-store > "$OUT/compile_$1_$3.json" 2> "$OUT/compile_$1_$3.log"
  python3 - "$OUT/compile_$1_$3.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
print(f"{v['seconds']['compile']:.2f} {v['status']} {str(v['compile_cache_hit']).lower()}")
PY
}
: > "$OUT/compile_times.txt"
for i in $(seq 1 "${SANDBOX_COMPILES:-5}"); do
  echo "sandboxed $(compile_once sandboxed bubblewrap $i)" >> "$OUT/compile_times.txt"
  echo "unsandboxed $(compile_once plain none $i)" >> "$OUT/compile_times.txt"
done
cat "$OUT/compile_times.txt"

# 4. NVML: quiet, then beside a GPU-busy process.
timed_eval() {  # $1: label
  timeout 200 kforge eval kernelbench:level1#19 "$RELU" --set batch_size=16 --set dim=1024 --target nvidia/cuda --time --json --no-store \
    > "$OUT/load_$1.json" 2> "$OUT/load_$1.log"
}
timed_eval quiet
python3 - > "$OUT/gpu_burner.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + 120
while time.time() < end:
    for _ in range(20):
        a = a @ a
        a = a / a.norm()
    torch.cuda.synchronize()
PY
BURNER=$!
sleep 8  # CUDA context up, kernels running
timed_eval busy
kill "$BURNER" 2>/dev/null; wait "$BURNER" 2>/dev/null

python3 - "$OUT" "$CANARY_RC" <<'PY'
import json, os, statistics, sys
out, canary_rc = sys.argv[1], int(sys.argv[2])
print()
print("| measurement | result |")
print("|---|---|")
print(f"| compile_sandbox_test (.cu: honest, canaries; view rules) | "
      f"{'all passed' if canary_rc == 0 else 'FAILED (rc %d): see compile_sandbox_cu.log' % canary_rc} |")
view = open(os.path.join(out, "view.txt")).read().strip() if os.path.exists(os.path.join(out, "view.txt")) else ""
print(f"| nvcc's view | {view or 'not logged'} |")
times = {"sandboxed": [], "unsandboxed": []}
for line in open(os.path.join(out, "compile_times.txt")):
    parts = line.split()
    if len(parts) >= 3 and parts[2] == "correct" and parts[3] == "false":
        times[parts[0]].append(float(parts[1]))
for k, v in times.items():
    med = f"{statistics.median(v):.2f} s" if v else "n/a"
    print(f"| fresh nvcc compile, {k} (median of {len(v)}) | {med} |")
for label in ("quiet", "busy"):
    try:
        v = json.load(open(os.path.join(out, f"load_{label}.json")))
        load = (v.get("timing") or {}).get("load") or {}
        cand = load.get("candidate") or {}
        print(f"| timed ReLU, {label}: status / load.busy / other SM % / device note | "
              f"{v['status']} / {load.get('busy')} / {cand.get('device_other_sm_util')} / "
              f"{cand.get('device_note')} |")
    except Exception as e:  # noqa: BLE001 - report whatever is missing
        print(f"| timed ReLU, {label} | no verdict ({e}) |")
PY
