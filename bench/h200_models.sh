#!/usr/bin/env bash
# The newer programming models on one NVIDIA H200, in one device call (well under 10 minutes):
# CuTe DSL (nvidia/cute) and Helion (nvidia/helion) through the real judge.
#   1. installs the carried wheels: CuTe DSL 4.8.1 from /tmp/cute or .whl/cute (the lead carries
#      nvidia-cutlass-dsl, -libs-base, -libs-cu13; `pip --target` does not run their .pth, so
#      dsl_packages goes on the path too), Helion from .whl/helion: the newest wheel that imports
#      under this torch (1.5.1 does not import with torch 2.11; 1.5.0 and earlier are tried next);
#   2. programming_models_test for the cuda, triton, cute and helion rows: each model's one-shot
#      example rendered, answered, parsed, through the guardrails, compiled where native, and
#      evaluated on the H200 (status correct);
#   3. kforge eval of the honest examples (correct, timed) and the red-team fixtures
#      (tests/fixtures/models/: each must end as `guardrail` for the reason its docstring names);
#   4. one prompt of `kforge run` per model through the inbox: without answers the prompts come
#      back in $OUT/inbox-<model>/ (answer them off the device as the model, into
#      .carry/inbox-<model>/0001-answer.md); with answers carried in, the run records the one-prompt
#      conversation into $OUT/<model>-conversation.jsonl and the kernel is judged.
# Needs .carry/bin/{kforge,programming_models_test,bwrap}, .carry/lib and .carry/kernelbench as the
# other h200 scripts. Prints a table last; everything goes to $OUT.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
SITE=/tmp/site-models
mkdir -p $SITE
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target $SITE .whl/*.whl
fi
CUTE_WHEELS=$(ls /tmp/cute/*.whl .whl/cute/*.whl 2>/dev/null)
if [ -n "$CUTE_WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target $SITE $CUTE_WHEELS
fi
PYPATH=$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages
helion_version=none
for wheel in $(ls -r .whl/helion/helion-*.whl 2>/dev/null); do
  rm -rf /tmp/site-helion && mkdir -p /tmp/site-helion
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-helion "$wheel"
  if PYTHONPATH=/tmp/site-helion:$PYPATH python3 -c "import helion" 2>>"$OUT/helion-import.log"; then
    helion_version=$(basename "$wheel"); PYPATH=/tmp/site-helion:$PYPATH; break
  fi
done
chmod -R a+rX $SITE /tmp/site-helion 2>/dev/null
export PYTHONPATH=$PYPATH KFORGE_RUNNER_PYTHONPATH=$PYPATH
export LD_LIBRARY_PATH=$ROOT/.carry/lib:${LD_LIBRARY_PATH:-}
export PATH=$ROOT/.carry/bin:$PATH
export KFORGE_HOME=$ROOT KFORGE_KERNELBENCH_DIR=${KFORGE_KERNELBENCH_DIR:-$ROOT/.carry/kernelbench}
export KFORGE_PYTHON=${KFORGE_PYTHON:-$(command -v python3)} KFORGE_CACHE_DIR=/tmp/kforge-cache
python3 -c "import cutlass; print('cutlass', cutlass.__version__)" > "$OUT/versions.txt" 2>&1
echo "helion wheel: $helion_version" >> "$OUT/versions.txt"
kforge targets > "$OUT/targets.txt" 2>&1

declare -A ROW
# 2. The table-driven test on the device.
timeout 240 programming_models_test \
  --gtest_filter='AllModels/*/cuda:AllModels/*/triton:AllModels/*/cute:AllModels/*/helion' \
  > "$OUT/programming_models.log" 2>&1
for m in cuda triton cute helion; do
  ROW[$m]=$(grep -E "^\[ +(OK|FAILED|SKIPPED) +\] AllModels/ModelRowTest\.ExampleIsCorrect/$m" \
    "$OUT/programming_models.log" | awk '{print $2}')
done

# 3. Honest examples and red-team fixtures through kforge eval.
verdict() {  # target file -> status word
  timeout 150 kforge eval templates/examples/reference.py "$2" --target "$1" --json --no-store \
    > "$OUT/eval-$(basename "$2" .py)-$3.json" 2>>"$OUT/eval.log"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], (d.get('diagnostics') or '')[:80].replace('\n',' '))" \
    "$OUT/eval-$(basename "$2" .py)-$3.json" 2>/dev/null || echo "no-verdict"
}
HONEST_CUTE=$(verdict nvidia-h200/cute templates/examples/cute/kernel.py cute)
HONEST_HELION=$(verdict nvidia-h200/helion templates/examples/helion/kernel.py helion)
RT_CUTE=$(verdict nvidia-h200/cute tests/fixtures/models/cute/torch_fallback.py cute)
RT_HELION_HOST=$(verdict nvidia-h200/helion tests/fixtures/models/helion/host_compute.py helion)
RT_HELION_CACHE=$(verdict nvidia-h200/helion tests/fixtures/models/helion/output_cache.py helion)

# 4. One prompt per model through the inbox (recorded when the answer is carried in).
CONV=()
for m in cute helion; do
  W=/tmp/models-$m; rm -rf $W; mkdir -p $W/kforge-inbox
  if [ -d .carry/inbox-$m ]; then cp .carry/inbox-$m/* $W/kforge-inbox/; fi
  (cd $W && timeout 200 kforge run "$ROOT/templates/examples/reference.py" --target nvidia-h200/$m \
     --model inbox --iterations 1 --no-profile --runs-dir $W/runs \
     --record "$OUT/$m-conversation.jsonl" \
     --record-note "inbox answer written off the device by an agent acting as the model; one prompt; bench/h200_models.sh" \
     > "$OUT/run-$m.log" 2>&1)
  CONV+=("$m:exit=$?")
  cp -r $W/kforge-inbox "$OUT/inbox-$m"
done

echo
echo "model   | example on the H200 (table test) | kforge eval honest | red team"
echo "cuda    | ${ROW[cuda]:-?} | - | -"
echo "triton  | ${ROW[triton]:-?} | - | -"
echo "cute    | ${ROW[cute]:-?} | $HONEST_CUTE | torch_fallback: $RT_CUTE"
echo "helion  | ${ROW[helion]:-?} | $HONEST_HELION | host_compute: $RT_HELION_HOST; output_cache: $RT_HELION_CACHE"
echo "versions: $(tr '\n' ' ' < "$OUT/versions.txt")"
echo "one-prompt runs (exit 0: a correct kernel; 5: waiting for the answer in \$OUT/inbox-*): ${CONV[*]}"
