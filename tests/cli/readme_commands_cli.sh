#!/usr/bin/env bash
# The README's commands, exactly as written, on this machine: every `kforge ...` line (and the
# venv line) of its ```sh blocks except those for a GPU target, Slurm or a profile of GPU files,
# in README order, from a folder that sees the repository's examples/ and tests/ as the README's
# reader does (the repository's root). A command's expected exit code is 0, or N where its
# comment says "(exit N". `kforge-runs/<run-id>` is the newest run folder; a command that pauses
# for an inbox answer is answered where it says, as the README tells the reader to. Also: the
# model ids the README shows are the shipped registry's. Changing the README changes this test.
# Exit 77 (skipped) without the KernelBench data.
set -euo pipefail
kforge="$1"
source_home="$2"
readme="$source_home/README.md"
data="${KFORGE_KERNELBENCH_DIR:-$source_home/../shared/data/kernelbench}"
[ -f "$data/level1.jsonl" ] || { echo "SKIP: no KernelBench data at $data"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export KFORGE_HOME="$source_home"
# The README's machine: Debian 12's python3, kforge on PATH as its setup says.
export PATH="$(dirname "$kforge"):/usr/bin:$PATH"
ln -s "$source_home/examples" "$source_home/tests" "$work/"
cd "$work"

# The model ids of the README's registry example and of its --model options are shipped ones.
shipped=$(sed -n 's/^id = "\(.*\)"/\1/p' "$source_home/examples/models.toml")
for id in $(sed -n 's/^id = "\([^"]*\)".*/\1/p' "$readme") \
          $(grep -o -- '--model [a-z][a-z0-9.-]*' "$readme" | awk '{print $2}'); do
  grep -qx -- "$id" <<< "$shipped" || fail "README model id '$id' is not in examples/models.toml"
done

# The commands: lines of ```sh blocks.
mapfile -t lines < <(awk '/^```sh$/{on=1; next} /^```$/{on=0} on' "$readme")
ran=0
for line in "${lines[@]}"; do
  case "$line" in
    "kforge "*|"python3 -m venv "*) ;;
    *) continue ;;
  esac
  if grep -Eq 'nvidia|amd[-/]|intel|apple|slurm|--from ' <<< "$line"; then
    echo "-- not on this machine: $line"
    continue
  fi
  expected=0
  if [[ "$line" =~ \(exit\ ([0-9]+) ]]; then expected=${BASH_REMATCH[1]}; fi
  command=$(sed -E 's/[[:space:]]+#[[:space:]].*$//' <<< "$line")
  if [[ "$command" == *"<run-id>"* ]]; then
    newest=$(ls -t kforge-runs | head -1)
    [ -n "$newest" ] || fail "no run for <run-id> in: $line"
    command=${command//<run-id>/$newest}
  fi
  echo "== $command   (expect exit $expected)"
  set +e
  bash -c "$command" > out.txt 2>&1
  code=$?
  set -e
  tail -n 25 out.txt
  [ "$code" = "$expected" ] || fail "exit $code, expected $expected: $command"
  ran=$((ran + 1))
  # A pause for an inbox answer: answer it where the command says (the README: "answer
  # kforge-inbox/NNNN-prompt.md in kforge-inbox/NNNN-answer.md"), as the model would.
  if [[ "$command" == "kforge run "*"--model inbox"* ]]; then
    answer=$(grep -o 'write it to [^ ]*-answer.md' out.txt | head -1 | sed 's/write it to //')
    [ -n "$answer" ] || fail "the paused run does not say where its answer goes"
    { printf '```python title=kernel.py\n'; cat tests/fixtures/candidates/relu/honest.cl.py; printf '```\n'; } \
      > "$answer"
  fi
done
[ "$ran" -ge 8 ] || fail "only $ran README commands ran: did the README's blocks change form?"
echo "PASS: $ran README commands ran as written"
