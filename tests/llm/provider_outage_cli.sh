#!/usr/bin/env bash
# A provider outage pauses `kforge run` instead of ending it: a local Anthropic-format server
# answers the first call with a correct kernel and every later one with 529 Overloaded. The run
# must exit 4 (paused by the provider), print the `kforge resume` command, not print "Best
# kernel:" as if it had finished, and be stored as `interrupted`; `kforge resume` against the
# recovered server finishes it without asking the first question again. Before, the run ended
# after iteration 1 with exit 0 and "Best kernel: ...". Exit 77 (skipped) when cpu/cpp cannot run.
set -euo pipefail
kforge="$1"
source_home="$2"
server="$3"
work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

{ printf 'Here it is.\n\n```cpp\n'; cat "$source_home/tests/fixtures/candidates/relu/honest.cpp"; printf '```\n'; } \
  > "$work/kernel.md"
cat > "$work/advice.md" <<'ADVICE'
```json
{"recommendations": [{"bottleneck": "memory bandwidth", "evidence": "one load and one store per element", "changes": ["use 16-byte vector loads"], "expected_gain": "1.2x"}]}
```
ADVICE

# Starts the server with "$@" and writes the registry pointing at it.
start_server() {
  rm -f "$work/port"
  "$server" --provider anthropic --port-file "$work/port" --generation "$work/kernel.md" \
    --analysis "$work/advice.md" "$@" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  cat > "$work/models.toml" <<TOML
[[models]]
id = "claude-fake"
provider = "anthropic"
endpoint = "http://127.0.0.1:$(cat "$work/port")"
api_key_env = "FAKE_ANTHROPIC_KEY"
max_attempts = 2
TOML
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
export FAKE_ANTHROPIC_KEY="sk-ant-fake-0123456789abcdefghijklmn"

start_server --fail 529 --fail-from 1 --fail-count -1 --log "$work/first.log"
set +e
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/cpp --model claude-fake \
  --models "$work/models.toml" --iterations 3 --no-profile --runs-dir "$work/runs" \
  > "$work/first.txt" 2>&1
code=$?
set -e
cat "$work/first.txt"
if grep -q "cannot run here" "$work/first.txt"; then exit 77; fi
stop_server
run_dir="$(ls -d "$work"/runs/run-*)"
[ "$code" = 4 ] || { echo "expected exit 4 (paused by the provider), got $code"; exit 1; }
grep -q "kforge resume $run_dir" "$work/first.txt" || { echo "no resume command printed"; exit 1; }
if grep -q "^Best kernel:" "$work/first.txt"; then echo "a paused run claimed to be finished"; exit 1; fi
grep -q "529" "$work/first.txt" || { echo "the failure was not named"; exit 1; }
status="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select status from runs").fetchone()[0])' "$run_dir/run.sqlite")"
[ "$status" = interrupted ] || { echo "run stored as '$status', not interrupted"; exit 1; }
# The key never reaches the terminal.
if grep -q "$FAKE_ANTHROPIC_KEY" "$work/first.txt"; then echo "the key was printed"; exit 1; fi

start_server --log "$work/second.log"
"$kforge" resume "$run_dir" | tee "$work/second.txt"
stop_server
grep -q "^Best kernel: $run_dir/best/kernel.cpp" "$work/second.txt"
status="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select status from runs").fetchone()[0])' "$run_dir/run.sqlite")"
[ "$status" = finished ] || { echo "resumed run stored as '$status'"; exit 1; }
# The first answer came from the store: the recovered server saw only the calls after it
# (two analyses and two generations).
[ "$(wc -l < "$work/second.log")" = 4 ] || { echo "resume asked $(wc -l < "$work/second.log") questions"; exit 1; }

# The same outage in a bench: the affected task is paused (resumable), the bench says so and
# exits 4.
cat > "$work/suite.toml" <<'SUITE'
[[task]]
id = "relu"
source = "kernelbench:level1#19"
overrides = { batch_size = 16, dim = 1024 }
SUITE
start_server --fail 529 --fail-from 1 --fail-count -1
set +e
"$kforge" bench "$work/suite.toml" --target cpu/cpp --model claude-fake --models "$work/models.toml"   --iterations 2 --no-time --out "$work/bench" > "$work/bench.txt" 2>&1
code=$?
set -e
stop_server
cat "$work/bench.txt"
[ "$code" = 4 ] || { echo "bench: expected exit 4 (paused by the provider), got $code"; exit 1; }
grep -q "continue them: kforge resume $work/bench" "$work/bench.txt" || { echo "bench: no resume command"; exit 1; }
status="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select status from runs").fetchone()[0])' "$work/bench/run.sqlite")"
[ "$status" = interrupted ] || { echo "bench stored as '$status', not interrupted"; exit 1; }
echo "the outage paused the run and the bench (exit 4, interrupted) and the resume finished the run"
