#!/usr/bin/env bash
# Issue 9 on an H200: the gpt-oss-style model at gpt-oss-20b's layer dimensions (configuration
# `real`: 4 layers, bf16, batch 1, 8, 32, 128) through `kforge e2e` on nvidia-h200/cuda, with
# transformers' GptOssForCausalLM (random weights), then the exported package checked in a fresh
# virtual environment. Figures for bench/RESULTS.md land in $OUT.
#
# Needs no package registry. Carried in .whl/ beside the others (bench/h200_env.sh installs every
# wheel there into /tmp/site): transformers and its pure-Python dependencies, downloaded on a
# machine with PyPI access by
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#       -d .whl transformers==4.57.1 tokenizers safetensors huggingface-hub regex pyyaml \
#       filelock fsspec packaging requests tqdm hf-xet
# (transformers >= 4.55 has gpt-oss; numpy and torch come from the machine's own install).
#
# Conversation, one of:
#   E2E_CASSETTE=FILE   replay a recorded conversation (--replay-match numbers);
#   E2E_RECORD=FILE     record one through the inbox: the run waits for each answer file
#                       (kforge-inbox/NNNN-answer.md, see docs/llm.md) and E2E_NOTE says who
#                       answered (the cassette's header);
#   E2E_MODEL=ID        call a registry model (needs its key and network).
set -euo pipefail
source "$(dirname "$0")/h200_env.sh"
cmake --preset dev >/dev/null && cmake --build build/dev -j16 --target kforge >/dev/null
KFORGE=$ROOT/build/dev/src/cli/kforge
MODEL=$ROOT/examples/e2e/gpt_oss_moe.py
SITES=${E2E_SITES:-GptOssExperts,GptOssRMSNorm}

python3 -c "import transformers; print('transformers', transformers.__version__)" | tee "$OUT/e2e_versions.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee -a "$OUT/e2e_versions.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" | tee -a "$OUT/e2e_versions.txt"

if [ -n "${E2E_CASSETTE:-}" ]; then
  LLM=(--model inbox --replay "$E2E_CASSETTE" --replay-match numbers)
elif [ -n "${E2E_RECORD:-}" ]; then
  LLM=(--model inbox --inbox-wait --record "$E2E_RECORD" --record-note "${E2E_NOTE:?say who answers}")
else
  LLM=(--model "${E2E_MODEL:?set E2E_CASSETTE, E2E_RECORD or E2E_MODEL}")
fi
set +e
"$KFORGE" e2e "$MODEL" --config real --target nvidia-h200/cuda "${LLM[@]}" --sites "$SITES" \
  --iterations "${E2E_ITERATIONS:-3}" --timed-steps 50 --kernel-repeats 100 \
  --runs-dir "$OUT/e2e-runs" 2>&1 | tee "$OUT/e2e_real.txt"
echo "kforge e2e exit code: ${PIPESTATUS[0]}" | tee -a "$OUT/e2e_real.txt"
set -e
RUN=$(ls -d "$OUT"/e2e-runs/run-* | tail -1)
cp "$RUN/e2e/result.json" "$OUT/e2e_real_result.json"

# The exported package, KForge absent.
"$KFORGE" export "$RUN" --as torch-op --out "$OUT/e2e-pkg" --package kforge_ops_real
python3 -m venv --system-site-packages /tmp/e2e-venv
/tmp/e2e-venv/bin/pip install -q --no-build-isolation --no-index "$OUT/e2e-pkg"
(cd /tmp && env -u KFORGE_HOME PYTHONPATH=/tmp/site /tmp/e2e-venv/bin/python - "$MODEL" <<'PY'
import copy, importlib.util, sys
import torch
assert importlib.util.find_spec("kforge_runner") is None
import kforge_ops_real
spec = importlib.util.spec_from_file_location("gpt_oss_moe", sys.argv[1])
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
config = g.CONFIGS["real"]
torch.manual_seed(0)
original = g.build_model(config).to("cuda")
patched = copy.deepcopy(original)
handle = kforge_ops_real.patch(patched)
a, b = g.new_session(original, config, 8, "cuda", 16), g.new_session(patched, config, 8, "cuda", 16)
same = all(torch.equal(a.step().argmax(-1), b.step().argmax(-1)) for _ in range(16))
print("exported package on cuda: same greedy tokens over 16 steps:", same,
      {k: v.calls for k, v in handle.kernels.items()})
PY
) 2>&1 | tee "$OUT/e2e_export.txt"
