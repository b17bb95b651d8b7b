#!/usr/bin/env bash
# The README's no-key workflow to its end: `kforge run … --model inbox` on cpu/opencl with
# profiles on, answered by hand (this script writes each answer file) and resumed after each
# answer, through the functional pass, the analysis (whose prompt quotes a profile) and the
# optimization pass. Each resume must read the answer written to the prompt it was given: the
# analysis prompt must not come back with a new number (a resume that profiles again changes
# its figures, hence its fingerprint). Exit 77 (skipped) when cpu/opencl cannot run here.
set -euo pipefail
kforge="$1"
source_home="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export KFORGE_HOME="$source_home"
fail() { echo "FAIL: $*"; exit 1; }
cat > "$work/models.toml" <<TOML
[[models]]
id = "box"
provider = "inbox"
dir = "$work/inbox"
TOML
fence() {  # fence LANG FILE: the file as one fenced block titled kernel.py
  printf 'Here it is.\n\n```%s title=kernel.py\n' "$1"; cat "$2"; printf '```\n'
}
prompts() { ls "$work/inbox" | grep -c -- '-prompt.md$' || true; }

set +e
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/opencl --model box \
  --models "$work/models.toml" --iterations 2 --runs-dir "$work/runs" > "$work/1.txt" 2>&1
code=$?
set -e
cat "$work/1.txt"
if grep -q "cannot run here" "$work/1.txt"; then exit 77; fi
[ "$code" = 5 ] || fail "exit $code while waiting for the first answer, not 5 (paused)"
[ "$(prompts)" = 1 ] || fail "expected one prompt, found $(prompts)"
run_dir="$(ls -d "$work"/runs/run-*)"

# Answer 1: a correct kernel (functional pass).
fence python "$source_home/tests/fixtures/candidates/relu/honest.cl.py" > "$work/inbox/0001-answer.md"
set +e; "$kforge" resume "$run_dir" > "$work/2.txt" 2>&1; code=$?; set -e
cat "$work/2.txt"
[ "$code" = 5 ] || fail "exit $code while the analysis prompt waits for its answer, not 5"
grep -q "functional   · correct" "$work/2.txt" || fail "the first answer was not judged correct"
[ "$(prompts)" = 2 ] || fail "expected prompts 1 and 2, found $(prompts)"
grep -q '^## Profile' "$work/inbox/0002-prompt.md" || fail "the analysis prompt has no profile"

# Answer 2: the analysis agent's advice.
cat > "$work/inbox/0002-answer.md" <<'EOF'
```json
{"recommendations": [
  {"bottleneck": "launch overhead", "evidence": "most of the call has no kernel running",
   "changes": ["process four elements per work-item with float4 loads"],
   "expected_gain": "1.1x, fewer work-items to schedule"}
]}
```
EOF
set +e; "$kforge" resume "$run_dir" > "$work/3.txt" 2>&1; code=$?; set -e
cat "$work/3.txt"
[ "$code" = 5 ] || fail "exit $code while the optimization prompt waits for its answer, not 5"
[ "$(prompts)" = 3 ] || fail "the analysis answer was not read: $(ls "$work/inbox")"
grep -q "float4 loads" "$work/inbox/0003-prompt.md" || fail "the advice is not in the optimization prompt"

# Answer 3: the optimized kernel (same computation, a comment more).
{ cat "$source_home/tests/fixtures/candidates/relu/honest.cl.py"; echo "# one work-item per element"; } \
  > "$work/kernel2.py"
fence python "$work/kernel2.py" > "$work/inbox/0003-answer.md"
set +e; "$kforge" resume "$run_dir" > "$work/4.txt" 2>&1; code=$?; set -e
cat "$work/4.txt"
[ "$code" = 0 ] || fail "the finished run exited $code"
grep -q "optimization · correct" "$work/4.txt" || fail "no optimization pass was evaluated"
grep -q "^Best kernel: " "$work/4.txt" || fail "no best kernel"
[ "$(prompts)" = 3 ] || fail "a finished run wrote more prompts: $(ls "$work/inbox")"
echo "PASS: inbox run answered by hand through its optimization pass, profiles on"
