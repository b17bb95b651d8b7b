#!/usr/bin/env bash
# `--record` with resumes: an inbox `kforge run --record` stops at every unanswered prompt; each
# `kforge resume` answers one more. The cassette must end up holding the whole conversation (one
# entry per answer, indices in order), and replaying it alone must reproduce the run. Before, each
# resume recreated <cassette>.resumed.jsonl from scratch and the cassette lost answers. Exit 77
# (skipped) when cpu/cpp cannot run here.
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
{ printf 'Here it is.\n\n```cpp\n'; cat "$source_home/tests/fixtures/candidates/relu/honest.cpp"; printf '```\n'; } \
  > "$work/kernel.md"
cat > "$work/advice.md" <<'ADVICE'
```json
{"recommendations": [{"bottleneck": "memory bandwidth", "evidence": "one load and one store per element", "changes": ["use 16-byte vector loads"], "expected_gain": "1.2x"}]}
```
ADVICE
cassette="$work/conversation.jsonl"
set +e
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/cpp --model box \
  --models "$work/models.toml" --iterations 2 --no-profile --runs-dir "$work/runs" \
  --record "$cassette" > "$work/part-0.txt" 2>&1
set -e
cat "$work/part-0.txt"
if grep -q "cannot run here" "$work/part-0.txt"; then exit 77; fi
run_dir="$(ls -d "$work"/runs/run-*)"
# The three answers of a two-iteration run: a kernel, the analysis, a kernel.
answers=("$work/kernel.md" "$work/advice.md" "$work/kernel.md")
for n in 1 2 3; do
  prompt="$work/inbox/$(printf '%04d' "$n")-prompt.md"
  [ -f "$prompt" ] || { echo "prompt $n was not written"; exit 1; }
  cp "${answers[$((n - 1))]}" "$work/inbox/$(printf '%04d' "$n")-answer.md"
  set +e
  "$kforge" resume "$run_dir" > "$work/part-$n.txt" 2>&1
  code=$?
  set -e
  cat "$work/part-$n.txt"
  # Each resume but the last pauses at the next prompt (its exit code is the inbox's pause).
  if [ "$n" = 3 ]; then
    [ "$code" = 0 ] || { echo "the last resume exited $code"; exit 1; }
  fi
done
[ ! -e "$cassette.resumed.jsonl" ] || { echo "a second cassette was written beside the first"; exit 1; }
entries="$(tail -n +2 "$cassette" | grep -c '"fingerprint"')"
[ "$entries" = 3 ] || { echo "the cassette holds $entries answers, not 3"; cat "$cassette"; exit 1; }
indices="$(python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["index"]) for l in open(sys.argv[1]).read().splitlines()[1:]))' "$cassette")"
[ "$indices" = "0 1 2" ] || { echo "cassette indices are '$indices'"; exit 1; }
# The cassette alone replays the whole run.
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/cpp --model box \
  --iterations 2 --no-profile --runs-dir "$work/replays" --replay "$cassette" \
  --replay-match numbers | tee "$work/replay.txt"
grep -q "^Best kernel:" "$work/replay.txt"
echo "three resumes recorded one complete cassette, and it replays the run"
