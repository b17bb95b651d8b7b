#!/usr/bin/env bash
# `kforge run` and `kforge resume` end to end through the inbox provider: the run stops waiting for
# the model's answer, the answer is written, `kforge resume` finishes with a correct kernel, and the
# printed `kforge eval` command checks it. Exit 77 (skipped) when cpu/cpp cannot run here.
set -euo pipefail
kforge="$1"
source_home="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/models.toml" <<TOML
[[models]]
id = "box"
provider = "inbox"
dir = "$work/inbox"
TOML
set +e
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/cpp --model box \
  --models "$work/models.toml" --iterations 1 --runs-dir "$work/runs" > "$work/first.txt" 2>&1
code=$?
set -e
cat "$work/first.txt"
if grep -q "cannot run here" "$work/first.txt"; then exit 77; fi
# A pause for an answer has its own exit code (5, docs/exit-codes.md) and is worded as a pause.
[ "$code" = 5 ] || { echo "expected exit 5 while waiting for the answer, got $code"; exit 1; }
grep -q "paused: waiting for answer 1: write it to $work/inbox/0001-answer.md" "$work/first.txt"
grep -q "kforge resume $work/runs/run-" "$work/first.txt"
if grep -q "call failed" "$work/first.txt"; then echo "a pause is worded as a failure"; exit 1; fi
[ -f "$work/inbox/0001-prompt.md" ] || { echo "no prompt written"; exit 1; }
{ printf 'Here it is.\n\n```cpp\n'; cat "$source_home/tests/fixtures/candidates/relu/honest.cpp"; printf '```\n'; } \
  > "$work/inbox/0001-answer.md"
run_dir="$(ls -d "$work"/runs/run-*)"
"$kforge" resume "$run_dir" | tee "$work/second.txt"
grep -q "functional   · correct" "$work/second.txt"
grep -q "^Best kernel: $run_dir/best/kernel.cpp" "$work/second.txt"
check="$(sed -n 's/^Check it: *kforge //p' "$work/second.txt")"
# shellcheck disable=SC2086
"$kforge" $check --no-store | grep -q "^correct"
echo "run, resume and the printed eval command all passed"
