#!/usr/bin/env bash
# `kforge e2e` on an H200, one device call per round of the conversation. No LLM is reachable from the
# device and a call cannot wait for a person, so the conversation is recorded through the inbox
# in rounds (docs/llm.md "The inbox"): each round runs the whole `kforge e2e` again with the
# answers so far (.carry/inbox/NNNN-answer.md, carried in); already answered prompts are answered
# from their files, the first unanswered prompt of each site is written and that site stops. The
# new prompts come back in $OUT/inbox, are answered off the device (each by a fresh helper agent
# given only the prompt file, acting as the model), and the next round carries them in. The round
# in which every site finishes is the complete run: its cassette ($OUT/e2e-cassette.jsonl) holds
# the whole conversation, and its measurement is the result.
#
#   E2E_ITERATIONS (2) E2E_TIMED_STEPS (20) E2E_EXTRA (more kforge e2e options, e.g. --no-profile)
#   E2E_TIMEOUT (500 s) E2E_EXPORT (unset: no export check)
#   E2E_CASSETTE=FILE (relative to the repository): replay that conversation instead of recording
#   bash bench/h200_e2e_round.sh
#
# The model: examples/e2e/gpt_oss_moe.py, configuration `real` (gpt-oss-20b's layer dimensions, 4
# of 24 layers, 32k vocabulary, bf16; batch 1, 8, 32, 128), transformers' GptOssForCausalLM with
# random weights. transformers and its pure-Python dependencies are carried as wheels in
# .carry/tfwhl (downloaded where PyPI is reachable by
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d DIR transformers==4.57.1
# without numpy and typing_extensions, which come with the device's torch).
set -uo pipefail
source bench/h200_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/tfwhl/*.whl
W=/tmp/e2e-round; rm -rf $W; mkdir -p $W/kforge-inbox
if [ -d .carry/inbox ]; then cp .carry/inbox/* $W/kforge-inbox/; fi
{
  python3 -c "import transformers; print('transformers', transformers.__version__)"
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
} > $OUT/versions.txt 2>&1
cat $OUT/versions.txt
cd $W
t0=$(date +%s)
echo "kforge e2e starts $(date -u +%FT%TZ)" | tee $OUT/e2e.txt
if [ -n "${E2E_CASSETTE:-}" ]; then  # replay a recorded conversation instead of recording
  LLM=(--replay "$(realpath "$ROOT/$E2E_CASSETTE")" --replay-match numbers)
else
  LLM=(--record $OUT/e2e-cassette.jsonl --record-note "inbox answers written by fresh helper agents (Claude, acting as the model), each given only its prompt file; recorded in rounds on an H200 (bench/h200_e2e_round.sh), $(date -u +%F)")
fi
timeout ${E2E_TIMEOUT:-500} kforge e2e $ROOT/examples/e2e/gpt_oss_moe.py --config real \
  --target nvidia-h200/cuda --model inbox --sites GptOssExperts,GptOssRMSNorm \
  --iterations ${E2E_ITERATIONS:-2} --timed-steps ${E2E_TIMED_STEPS:-20} --kernel-repeats 50 \
  --phase-timeout 450 ${E2E_EXTRA:-} --runs-dir $W/runs "${LLM[@]}" >> $OUT/e2e.txt 2>&1
echo "kforge e2e exit code $?, $(( $(date +%s) - t0 )) s" | tee -a $OUT/e2e.txt
tail -40 $OUT/e2e.txt
cp -r $W/kforge-inbox $OUT/inbox
RUN=$(ls -d $W/runs/run-* 2>/dev/null | tail -1)
if [ -n "$RUN" ]; then
  tar -czf $OUT/e2e-run.tgz -C $RUN e2e run.sqlite
  if [ -n "${E2E_EXPORT:-}" ] && ls $RUN/e2e/kernels/*.so > /dev/null 2>&1; then
    kforge export "$RUN" --as torch-op --out $W/pkg --package kforge_ops_real > $OUT/export.txt 2>&1
    python3 -m venv --system-site-packages /tmp/e2e-venv
    /tmp/e2e-venv/bin/pip install -q --no-build-isolation --no-index $W/pkg >> $OUT/export.txt 2>&1
    (cd /tmp && env -u KFORGE_HOME -u KFORGE_RUNNER_PYTHONPATH PYTHONPATH=/tmp/site \
      /tmp/e2e-venv/bin/python - $ROOT/examples/e2e/gpt_oss_moe.py <<'PY'
import copy, importlib.util, sys
import torch
assert importlib.util.find_spec("kforge_runner") is None, "KForge must be absent"
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
print("exported package, KForge absent, on", torch.cuda.get_device_name(0),
      "- same greedy tokens over 16 steps at batch 8:", same,
      {k: v.calls for k, v in handle.kernels.items()})
PY
    ) >> $OUT/export.txt 2>&1
    tail -3 $OUT/export.txt
  fi
fi
