#!/usr/bin/env bash
# `kforge bench --model inbox` on a terminal (a tmux pane, read with capture-pane), as the README
# runs it: each stopped task says which prompt waits and where its answer goes, the count does
# not call stopped tasks done, no stale frame is left; with --inbox-wait the rows say "waiting
# for answer N" and the clock moves; Ctrl-C says what happened and how to resume; the answers
# written, `kforge resume` finishes the bench. Exit 77 (skipped) without tmux or cpu/cpp.
set -euo pipefail
kforge="$1"
source_home="$2"
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
work="$(mktemp -d)"
session="kforge-bench-test-$$"
tmux() { command tmux -L "$session" "$@"; }  # a server of its own
trap 'tmux kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
export KFORGE_HOME="$source_home"
fail() { echo "FAIL: $*"; echo "--- pane:"; cat "$work/pane.txt" 2>/dev/null || true; exit 1; }
cat > "$work/models.toml" <<TOML
[[models]]
id = "box"
provider = "inbox"
dir = "$work/inbox"
TOML
cat > "$work/suite.toml" <<TOML
name = "two"
[[task]]
id = "relu"
source = "kernelbench:level1#19"
overrides = { batch_size = 16, dim = 1024 }
[[task]]
id = "softmax"
source = "kernelbench:level1#23"
overrides = { batch_size = 16, dim = 4093 }
TOML

# run_in_pane NAME COMMAND: runs COMMAND in a fresh 150x40 pane; its exit code goes to NAME.code.
run_in_pane() {
  tmux kill-session -t "$session" 2>/dev/null || true
  tmux new-session -d -s "$session" -x 150 -y 40 -c "$work" \
    "$2; echo \$? > $work/$1.code; sleep 600"
}
pane() { tmux capture-pane -p -J -t "$session" > "$work/pane.txt"; cat "$work/pane.txt"; }
wait_for() {  # wait_for SECONDS PATTERN: until the pane shows PATTERN
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    pane > /dev/null
    grep -q -- "$2" "$work/pane.txt" && return 0
    sleep 0.5
  done
  return 1
}
bench="$kforge bench suite.toml --target cpu/cpp --model box --models models.toml --iterations 1 --no-time --out runs/b"

# 1. The inbox without --inbox-wait: every task stops at its first prompt and says where it is.
run_in_pane first "$bench"
wait_for 300 "Run stored in" || { pane; fail "the bench did not end"; }
sleep 1; pane > /dev/null
if grep -q "cannot run here" "$work/pane.txt"; then exit 77; fi
cat "$work/pane.txt"
code=$(cat "$work/first.code")
[ "$code" != 0 ] || fail "exit 0 while prompts wait for answers"
grep -q "0/2 tasks done" "$work/pane.txt" || fail "stopped tasks were counted as done"
grep -q "2 paused (waiting for answers)" "$work/pane.txt" || fail "the paused tasks are not counted"
[ "$code" = 5 ] || fail "a bench paused for answers exited $code, not 5"
for n in 1 2; do
  grep -q "waiting for answer $n: write it to $work/inbox/000$n-answer.md" "$work/pane.txt" ||
    fail "the pane does not say where answer $n goes"
done
[ "$(grep -c '% · ETA' "$work/pane.txt")" = 1 ] || fail "more than one frame of the view is left"
grep -q "kforge resume $work/runs/b" "$work/pane.txt" || fail "no resume command"

# 2. With --inbox-wait: the rows say what each task does, and the clock moves.
rm -rf "$work/inbox" "$work/runs"
run_in_pane second "$bench --inbox-wait"
wait_for 300 "waiting for answer" || { pane; fail "no row says it waits for an answer"; }
clock() { grep -o '[0-9hms]* *$' <<< "$(grep 'tasks done' "$work/pane.txt")" | tr -d ' '; }
first_clock=$(clock)
sleep 3
pane > /dev/null
[ "$(clock)" != "$first_clock" ] || fail "the clock stayed at $first_clock"
# Ctrl-C twice (the inbox calls in flight wait for answers until abandoned).
tmux send-keys -t "$session" C-c
wait_for 30 "stopping (Ctrl-C)" || fail "Ctrl-C printed nothing"
tmux send-keys -t "$session" C-c
wait_for 60 "kforge resume $work/runs/b" || fail "no resume command after Ctrl-C"
sleep 1; pane
grep -q "Stopped by a signal: 0 task(s) done" "$work/pane.txt" || fail "what happened is not said"
[ "$(grep -c '% · ETA' "$work/pane.txt")" = 1 ] || fail "more than one frame of the view is left"

# 3. Answer both prompts as the model, resume: both tasks correct.
for prompt in "$work"/inbox/*-prompt.md; do
  answer="${prompt%-prompt.md}-answer.md"
  if grep -q "19_ReLU" "$prompt"; then fixture=relu; else fixture=softmax; fi
  { printf '```cpp\n'; cat "$source_home/tests/fixtures/candidates/$fixture/honest.cpp"; printf '```\n'; } > "$answer"
done
run_in_pane third "$kforge resume runs/b"
wait_for 300 "Run stored in" || { pane; fail "the resumed bench did not end"; }
sleep 1; pane
[ "$(cat "$work/third.code")" = 0 ] || fail "the resumed bench exited $(cat "$work/third.code")"
grep -q "2/2 tasks with a correct kernel" "$work/pane.txt" || fail "not both tasks correct"
echo "PASS: kforge bench --model inbox on a terminal"
