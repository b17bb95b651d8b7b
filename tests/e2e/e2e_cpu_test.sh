#!/usr/bin/env bash
# `kforge e2e` on the CPU: the tiny gpt-oss-style model through `kforge e2e` on cpu/cpp with a
# replayed conversation; integration applied and the patched model's logits and greedy tokens
# must match the original's (the command's exit code says so, and result.json is checked too).
# Then `kforge export --as torch-op`, installed into a fresh virtual environment and used to patch
# a new tiny model with KForge absent.
#
# Usage: e2e_cpu_test.sh KFORGE PYTHON WORK_DIR
set -euo pipefail
KFORGE=$1
PYTHON=$2
WORK=$3
HOME_DIR=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$HOME_DIR/examples/e2e/gpt_oss_moe.py
CASSETTE=$HOME_DIR/examples/e2e/tiny-conversation.jsonl

if ! command -v g++ >/dev/null; then echo "g++ not installed: skipped"; exit 77; fi
if ! "$PYTHON" -c "import torch" 2>/dev/null; then echo "no torch for $PYTHON: skipped"; exit 77; fi
rm -rf "$WORK" && mkdir -p "$WORK"

export KFORGE_E2E_IMPL=inrepo  # the CI's torch 1.13 cannot run current transformers
"$KFORGE" e2e "$MODEL" --config tiny --target cpu/cpp --model inbox \
  --sites GptOssExperts,GptOssRMSNorm --iterations 1 --no-profile \
  --replay "$CASSETTE" --replay-match numbers --timed-steps 10 --kernel-repeats 20 \
  --runs-dir "$WORK/runs" | tee "$WORK/e2e.txt"
RUN=$(ls -d "$WORK"/runs/run-*)

"$PYTHON" - "$RUN/e2e/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outputs_match"] is True, "outputs_match is not true"
assert "in-repo" in r["implementation"], r["implementation"]
integrated = sorted(s["site"] for s in r["syntheses"] if s["integrated"])
assert integrated == ["GptOssExperts", "GptOssRMSNorm"], integrated
m = r["measurement"]
rows = [e for e in m["equivalence"] if e["configuration"] == "eager+kforge"]
assert sorted(e["batch_size"] for e in rows) == [1, 4, 8], rows
assert all(e["within_tolerance"] and e["same_greedy_tokens"] and e["steps"] >= 16 for e in rows)
# The example's sessions take tokens: compared on the reference's token stream (teacher forcing).
assert all(e["teacher_forced"] for e in rows), rows
assert all(k["kforge_back_to_back_s"] > 0 and k["original_back_to_back_s"] > 0
           for k in m["kernels"]), m["kernels"]
assert all(c["kernel_calls"] > 0 and c["unrouted_calls"] == 0 for c in m["coverage"].values())
assert m["configurations"]["compile"]["available"] is False or m["torch"] >= "2"
print("result.json: outputs match at batch 1, 4, 8; kernels called:",
      {k: v["kernel_calls"] for k, v in m["coverage"].items()})
PY

"$KFORGE" export "$RUN" --as torch-op --out "$WORK/pkg" --package kforge_ops_tiny | tee "$WORK/export.txt"
# The install advice works on Debian's system Python (PEP 668): a venv, not a bare pip install.
grep -q "python3 -m venv --system-site-packages venv" "$WORK/export.txt"
grep -q "venv/bin/pip install --no-build-isolation --no-index $WORK/pkg" "$WORK/export.txt"
"$PYTHON" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/pip" install -q --no-build-isolation --no-index "$WORK/pkg"

# Outside KForge's tree, with no PYTHONPATH: the package must work without KForge.
mkdir -p "$WORK/elsewhere" && cd "$WORK/elsewhere"
env -u PYTHONPATH -u KFORGE_HOME "$WORK/venv/bin/python" - "$MODEL" <<'PY'
import copy, importlib.util, sys
import torch
assert importlib.util.find_spec("kforge_runner") is None, "KForge's runner is importable"
import kforge_ops_tiny
spec = importlib.util.spec_from_file_location("gpt_oss_moe", sys.argv[1])
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)
config = g.CONFIGS["tiny"]
torch.manual_seed(0)
original = g.build_model(config)
patched = copy.deepcopy(original)
handle = kforge_ops_tiny.patch(patched)
for batch in (1, 3, 8):
    a = g.new_session(original, config, batch, "cpu", 20)
    b = g.new_session(patched, config, batch, "cpu", 20)
    for step in range(20):
        la, lb = a.step(), b.step()
        assert torch.equal(la.argmax(-1), lb.argmax(-1)), f"tokens differ at batch {batch}"
        assert ((la - lb).abs() <= 1e-4 + 1e-4 * la.abs()).all(), f"logits differ at {batch}"
calls = {k: v.calls for k, v in handle.kernels.items()}
assert all(n > 0 for n in calls.values()) and not handle.unrouted, (calls, handle.unrouted)
print("exported package: patched model matches at batch 1, 3, 8; kernel calls", calls)
PY
echo "e2e_cpu_test: passed"
