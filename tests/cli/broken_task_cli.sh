#!/usr/bin/env bash
# A task that cannot run is the user's mistake, checked before the first prompt: `kforge run` and
# `kforge bench` exit 2 with one line naming the task's file and line, write no inbox prompt and
# leave no run folder; a misspelled override (`--set`, a suite's `overides`) is reported before
# any runner starts. Exit 77 (skipped) when cpu/cpp cannot run here.
set -euo pipefail
kforge="$1"
source_home="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export KFORGE_HOME="$source_home"
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"
cat > models.toml <<TOML
[[models]]
id = "box"
provider = "inbox"
dir = "$work/inbox"
TOML
good='import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 8

def get_inputs():
    return [torch.rand(batch_size, 16)]

def get_init_inputs():
    return []'
printf '%s\n' "$good" > good.py
printf '%s\n' "${good/torch.relu(x)/torch.relu(x}" > syntax.py
printf '%s\n' "${good/torch.relu(x)/x @ torch.ones(3, 3)}" > shapes.py

expect_usage() {  # expect_usage NAME PATTERN COMMAND...: exit 2 and PATTERN in its output
  local name=$1 pattern=$2; shift 2
  set +e; "$@" > "$name.txt" 2>&1; local code=$?; set -e
  cat "$name.txt"
  if grep -q "cannot run here" "$name.txt"; then exit 77; fi
  [ "$code" = 2 ] || fail "$name: exit $code, expected 2"
  grep -q -- "$pattern" "$name.txt" || fail "$name: no '$pattern' in its output"
}

expect_usage syntax "syntax.py:6: SyntaxError" \
  "$kforge" run syntax.py --target cpu/cpp --model box --models models.toml --runs-dir runs
expect_usage shapes "shapes.py:6: RuntimeError.*(forward)" \
  "$kforge" run shapes.py --target cpu/cpp --model box --models models.toml --runs-dir runs
[ ! -e inbox ] || [ -z "$(ls inbox)" ] || fail "a prompt was written for a broken task: $(ls inbox)"
[ ! -e runs ] || [ -z "$(ls runs)" ] || fail "a broken task left run folders: $(ls runs)"

cat > suite.toml <<'TOML'
name = "mixed"
[[task]]
id = "good"
source = "good.py"
[[task]]
id = "shapes"
source = "shapes.py"
TOML
expect_usage bench "task shapes cannot run: .*shapes.py:6" \
  "$kforge" bench suite.toml --target cpu/cpp --model box --models models.toml --no-time
[ ! -e kforge-runs ] || [ -z "$(ls kforge-runs)" ] || fail "bench left a run folder: $(ls kforge-runs)"
[ ! -e inbox ] || [ -z "$(ls inbox)" ] || fail "bench wrote a prompt for a broken suite"

# An unknown model: the user's error, and no dead run folder.
rm -rf kforge-runs
expect_usage model "nope" \
  "$kforge" bench suite.toml --target cpu/cpp --model nope --models models.toml --no-time
[ ! -e kforge-runs ] || [ -z "$(ls kforge-runs)" ] || fail "an unknown model left a run folder: $(ls kforge-runs)"

# Misspelled overrides: named with the nearest global or key, before any runner starts.
expect_usage set "no module-level global 'batchsize'.*did you mean 'batch_size'" \
  "$kforge" eval good.py "$source_home/tests/fixtures/candidates/relu/honest.cpp" \
  --target cpu/cpp --set batchsize=4 --no-store
# One NAME=VALUE per --set: a candidate written after it is the candidate, not a second value.
if "$kforge" targets | grep -q '^cpu/cpp .* yes  *yes'; then
  "$kforge" eval good.py --set batch_size=4 "$source_home/tests/fixtures/candidates/relu/honest.cpp" \
    --target cpu/cpp --no-store > set_order.txt 2>&1 || fail "--set before the candidate: $(tail -3 set_order.txt)"
fi
cat > typo.toml <<'TOML'
[[task]]
id = "good"
source = "good.py"
overides = { batch_size = 4 }
TOML
expect_usage suitekey "unknown key 'overides' (did you mean 'overrides'?)" \
  "$kforge" run typo.toml#good --target cpu/cpp --model box --models models.toml --runs-dir runs
: > empty.cpp
expect_usage empty "the candidate file empty.cpp is empty" \
  "$kforge" eval good.py empty.cpp --target cpu/cpp --no-store
# A replay that leaves its recording: exit 2, naming the flag a replay on another machine needs.
expect_usage replay "replay-match numbers" \
  "$kforge" run good.py --target cpu/cpp --model box --models models.toml --runs-dir runs \
  --replay "$source_home/examples/demo/demo-conversation.jsonl"
# A target this machine lacks: one line, exit 3, no traceback.
if ! "$kforge" targets | grep -q '^nvidia/cuda .* yes  *yes'; then
  set +e; "$kforge" eval good.py "$source_home/tests/fixtures/candidates/relu/honest.cu" \
    --target nvidia/cuda --no-store > target.txt 2>&1; code=$?; set -e
  cat target.txt
  [ "$code" = 3 ] || fail "eval on a missing target: exit $code, expected 3"
  grep -q "^kforge eval: target nvidia/cuda cannot run here: " target.txt || fail "no one-line reason"
  [ "$(wc -l < target.txt)" = 1 ] || fail "more than one line for a missing target"
  if grep -q "Traceback" target.txt; then fail "a traceback for a missing target"; fi
fi
expect_usage subcommand "unknown subcommand 'evall' (did you mean 'eval'?)" "$kforge" evall good.py
echo "PASS: broken tasks and misspelled overrides are the user's errors, caught before any prompt"
