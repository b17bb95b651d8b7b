#!/usr/bin/env bash
# Keys never printed: a streaming OpenAI-compatible server answers every call with an error event
# that quotes the key it was called with. `kforge run`, `kforge bench` and `kforge models check`
# must print the failure with the key redacted. Before, run and bench printed the key in clear
# ("the server reported an error mid-stream: {"message":"upstream failure for key ..."}"). The
# key is shaped like no known credential: only its registration can catch it.
set -euo pipefail
kforge="$1"
source_home="$2"
server="$3"
work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$server" --provider openai_compatible --port-file "$work/port" --stream-error-with-key &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
cat > "$work/models.toml" <<TOML
[[models]]
id = "streamer"
provider = "openai_compatible"
endpoint = "http://127.0.0.1:$(cat "$work/port")/v1"
api_key_env = "STREAMER_KEY"
stream = true
max_attempts = 2
TOML
export STREAMER_KEY="kfq7-Terminal-Leak-Probe-4410"
cat > "$work/suite.toml" <<'SUITE'
[[task]]
id = "relu"
source = "kernelbench:level1#19"
overrides = { batch_size = 16, dim = 1024 }
SUITE
set +e
"$kforge" models --models "$work/models.toml" check streamer > "$work/check.txt" 2>&1
"$kforge" run "$source_home/examples/suites/ci-cpu.toml#relu" --target cpu/cpp --model streamer \
  --models "$work/models.toml" --iterations 1 --no-profile --runs-dir "$work/runs" \
  > "$work/run.txt" 2>&1
"$kforge" bench "$work/suite.toml" --target cpu/cpp --model streamer --models "$work/models.toml" \
  --iterations 1 --no-time --out "$work/bench" > "$work/bench.txt" 2>&1
set -e
cat "$work/check.txt" "$work/run.txt" "$work/bench.txt"
if grep -q "cannot run here" "$work/run.txt"; then exit 77; fi
for out in check run bench; do
  if grep -q "$STREAMER_KEY" "$work/$out.txt"; then echo "kforge $out printed the key"; exit 1; fi
  grep -q "upstream failure for key \[REDACTED\]" "$work/$out.txt" ||
    { echo "kforge $out did not report the failure"; exit 1; }
done
# Nor does the key reach what the run stored.
if grep -rq "$STREAMER_KEY" "$work/runs" "$work/bench"; then echo "the key reached a run store"; exit 1; fi
echo "no command printed or stored the key"
