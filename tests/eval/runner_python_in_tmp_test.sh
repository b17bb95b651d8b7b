#!/usr/bin/env bash
# A runner Python installed under /tmp (a venv, as CI jobs often make) works inside the sandbox,
# whose /tmp is private and empty: `kforge eval` with KFORGE_PYTHON in such a venv gives a
# correct verdict, not "execvp ...: No such file or directory".
#   runner_python_in_tmp_test.sh KFORGE PYTHON
set -euo pipefail
KFORGE=$1
PYTHON=$2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
if ! "$PYTHON" -c "import torch" 2>/dev/null; then echo "no torch for $PYTHON: skipped"; exit 77; fi
WORK=$(mktemp -d /tmp/kforge-venv-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
"$PYTHON" -m venv --system-site-packages --without-pip "$WORK/venv"
cd "$WORK"
KFORGE_HOME=$SRC KFORGE_PYTHON=$WORK/venv/bin/python "$KFORGE" eval kernelbench:level1#19 \
  "$SRC/tests/fixtures/candidates/relu/honest.cpp" --target cpu/cpp --trials 2 \
  --set batch_size=16 --set dim=1024 --json > verdict.json || true
"$PYTHON" - verdict.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
assert v["status"] == "correct", (v["status"], v.get("message"), v.get("diagnostics"))
print("correct with the runner Python in a venv under /tmp")
PY
